"""What the ``planner_react`` differential compares: each request sent to the model, reduced
to what both harnesses must agree on, with upstream's texts out of it.

Used by ``tests/golden/generators/gen_planner_parity.py`` (upstream's orchestrator and
ours, the same scripted model and gym, upstream's real file) and by
``tests/run/test_planner_parity.py`` (ours alone, the stand-in file: CI has no upstream).

A request becomes ``{role, message_roles, tool_names, messages_sha256, tools_sha256, params,
messages}`` (``params``: the body's other fields, ``messages``: the reduced messages):

* the planner prompt is replaced by the sha256 of the three values filled into the
  template (system policy, user task, the tools' JSON), the executor's user message by
  those of the task and the plan, whichever template produced them: the rest of the
  request must then hash the same with upstream's file and with the stand-in;
* tool-call ids and the server's output-item ids are numbered in order of appearance; an
  input message's ``type: "message"`` (LangChain writes it, the API's default) is dropped;
  the gym's URL (a free port) is a
  placeholder, as are the gym's timestamps in tool outputs; an assistant message's ``content`` of ``""`` or ``null`` with tool calls
  reads the same (both mean "no text").
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["digest", "normalise_requests", "template_pattern"]

_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
"""The gym's ``sys_updated_on``: the wall clock of the write, never the same in two runs."""


def digest(value: Any) -> str:
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching ``template.format(...)`` with each field captured by name."""
    parts: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(f"(?P<{field}>.*)")
    return re.compile("".join(parts), re.S)


def _handoff_pattern(handoff: Sequence[str | None]) -> re.Pattern[str]:
    return re.compile(
        "".join(
            "(?P<plan>.*)"
            if part is None
            else "(?P<task>.*)"
            if part == "\x00task"
            else re.escape(part)
            for part in handoff
        ),
        re.S,
    )


def _tools_value(text: str, gym_url: str) -> str:
    """The tools' JSON as the prompt has it (key order, indentation), the gym's URL replaced."""
    return digest(text.replace(json.dumps(gym_url), '"<gym>"'))


def _content(content: Any, prompt: re.Pattern[str], handoff: re.Pattern[str], gym_url: str) -> Any:
    if not isinstance(content, str):
        return content
    if (found := prompt.fullmatch(content)) is not None:
        values = found.groupdict()
        values["tools"] = _tools_value(values["tools"], gym_url)
        return {"planner_prompt": {k: digest(v) if k != "tools" else v for k, v in values.items()}}
    if (found := handoff.fullmatch(content)) is not None:
        return {"executor_message": {k: digest(v) for k, v in found.groupdict().items()}}
    return content


def normalise_requests(
    bodies: Sequence[Mapping[str, Any]],
    *,
    prompt_template: str,
    handoff: Sequence[str | None],
    gym_url: str,
) -> list[dict[str, Any]]:
    """Each Chat Completions or Responses request body reduced as the module says."""
    prompt, hand = template_pattern(prompt_template), _handoff_pattern(handoff)
    calls: dict[str, str] = {}
    items: dict[str, str] = {}

    def call_id(value: Any) -> str:
        return calls.setdefault(str(value), f"call_{len(calls) + 1}")

    def item_id(value: Any) -> str:  # the server's ids of output items (rs_..., fc_...)
        return items.setdefault(str(value), f"item_{len(items) + 1}")

    reduced = []
    for body in bodies:
        messages = []
        for message in body.get("messages", body.get("input")) or ():
            item = dict(message)
            if "content" in item:
                item["content"] = _content(item["content"], prompt, hand, gym_url)
            if "role" in item and item.get("type") == "message" and "id" not in item:
                del item["type"]  # an input message with or without its default type
            if "id" in item:
                item["id"] = item_id(item["id"])
            if item.get("tool_calls"):
                if item["content"] == "":
                    item["content"] = None
                item["tool_calls"] = [
                    {**call, "id": call_id(call.get("id"))} for call in item["tool_calls"]
                ]
            for key in ("tool_call_id", "call_id"):
                if key in item:
                    item[key] = call_id(item[key])
            if "tool_call_id" in item:
                item["content"] = _CLOCK.sub("<time>", str(item["content"]))
            if item.get("type") == "function_call_output":
                item["output"] = _CLOCK.sub("<time>", str(item["output"]))
            messages.append(item)
        tools = body.get("tools") or []
        reduced.append(
            {
                "role": "executor" if tools else "planner",
                "message_roles": [m.get("role", m.get("type")) for m in messages],
                "tool_names": [t.get("function", t).get("name") for t in tools],
                "messages_sha256": digest(messages),
                "tools_sha256": digest(tools),
                "params": {
                    k: v for k, v in sorted(body.items()) if k not in ("messages", "input", "tools")
                },
                "messages": messages,
            }
        )
    return reduced


def compare_requests(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]], *, kept: set[str]
) -> list[str]:
    """How two reduced request lists differ, one line each (``params`` named in ``kept``
    may differ); every differential generator compares with it."""
    problems = []
    if len(ours) != len(theirs):
        problems.append(f"{len(ours)} requests, upstream sent {len(theirs)}")
    for number, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1):
        for field in a:
            if field == "params":
                ours_params = {k: v for k, v in a[field].items() if k not in kept}
                their_params = {k: v for k, v in b[field].items() if k not in kept}
                if ours_params != their_params:
                    problems.append(
                        f"request {number}: ours {ours_params}, upstream {their_params}"
                    )
                continue
            if field == "messages" or a[field] == b[field]:
                continue
            problems.append(f"request {number}: {field} differs")
            if field == "messages_sha256":
                for index, (x, y) in enumerate(zip(a["messages"], b["messages"], strict=False)):
                    if x != y:
                        problems.append(f"  message {index}: ours {x!r}\n  upstream {y!r}")
                        break
    return problems
