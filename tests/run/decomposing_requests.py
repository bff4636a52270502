"""What the ``decomposing`` differential compares: each request sent to the model, reduced to
what both harnesses must agree on, with upstream's texts out of it.

Used by ``tests/golden/generators/gen_decomposing_parity.py`` (upstream's orchestrator and
ours, upstream's real file) and ``tests/run/test_decomposing_parity.py`` (ours alone, the
stand-in file of ``tests/run/decomposing_upstream.py``: CI has no upstream).

Requests are reduced as ``planner_requests.normalise_requests`` reduces them (ids numbered,
the gym's URL and clock replaced); on top, every message that is one of upstream's texts
(the decomposition prompt, a sub-agent's prompt, the memory question) becomes
``{text: values}``: each value filled into it, as the sha256 of the value, where a value is
itself made of upstream's texts (the tools' lines, the working memory, the list of calls)
reduced the same way (a call's result with the gym's clock replaced, as in tool messages),
and each ``a if b else c`` as which branch was taken. Two files of
the same shape (upstream's, the stand-in) then reduce the same requests to the same thing.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from eog_core.run import DecomposingTemplate
from tests.run.planner_requests import _CLOCK, digest, normalise_requests, template_pattern

__all__ = [
    "normalise_decomposing",
    "our_outcome",
    "reduce_final",
    "reduce_plan",
    "reduce_text",
    "reduced_outcome",
    "without_error_wording",
]

Reducer = Callable[[str], Any]


class _Pattern:
    """A regex matching what an upstream :class:`Text` renders, a group per slot."""

    def __init__(self, node: ast.expr) -> None:
        self.groups: list[tuple[str, str]] = []  # (group, slot or "if:<test>")
        self.regex = re.compile(self._build(node), re.S)

    def _group(self, label: str) -> str:
        name = f"g{len(self.groups)}"
        self.groups.append((name, label))
        return name

    def _build(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            return re.escape(str(node.value))
        if isinstance(node, ast.JoinedStr):
            return "".join(self._build(value) for value in node.values)
        if isinstance(node, ast.FormattedValue):
            return self._build(node.value)
        if isinstance(node, ast.IfExp):
            name = self._group(f"if:{ast.unparse(node.test)}")
            return f"(?:(?P<{name}>){self._build(node.body)}|{self._build(node.orelse)})"
        if isinstance(node, ast.List):
            return re.escape("\n").join(self._build(element) for element in node.elts)
        label = ast.unparse(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.args
            and node.func.attr == "get"
        ):
            key = node.args[0]  # name.get(key, default): the default is upstream's text
            label = f"{ast.unparse(node.func)}({ast.unparse(key)})"
        return f"(?P<{self._group(label)}>.*?)"

    def reduce(self, value: str, nested: Mapping[str, Reducer]) -> list[list[Any]] | None:
        found = self.regex.fullmatch(value)
        if found is None:
            return None
        values: list[list[Any]] = []
        for name, label in self.groups:
            matched = found.group(name)
            if label.startswith("if:"):
                values.append([label, matched is not None])
            elif matched is not None:
                reducer = nested.get(label)
                values.append([label, reducer(matched) if reducer else digest(matched)])
        return values


def _first_literal(node: ast.expr) -> str:
    if isinstance(node, ast.JoinedStr) and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    raise AssertionError("the text does not start with a literal")


def _lines(node: ast.expr, nested: Mapping[str, Reducer] | None = None) -> Reducer:
    """A ``"\\n".join`` of lines of one text, each reduced."""
    pattern, head = _Pattern(node), _first_literal(node)

    def reduce(value: str) -> Any:
        if not value:
            return []
        lines = re.split(f"\n(?={re.escape(head)})", value)
        return [pattern.reduce(line, nested or {}) for line in lines]

    return reduce


def reduce_text(template: DecomposingTemplate) -> Callable[[str], Any]:
    """A message's content reduced when it is one of upstream's texts, else as it is."""
    plan = template_pattern(template.decomposition)
    tools = _lines(template.tool_line.node)
    memory = _Pattern(template.memory_parts.node)
    actions = _lines(
        template.action_line.node,
        {"json.dumps(result_data, indent=2)": lambda value: digest(_CLOCK.sub("<time>", value))},
    )
    no_calls = template.actions_text.node
    assert isinstance(no_calls, ast.IfExp) and isinstance(no_calls.orelse, ast.Constant)

    def memory_context(value: str) -> Any:
        return "empty" if value == template.memory_empty else memory.reduce(value, {})

    def actions_text(value: str) -> Any:
        return "no calls" if value == no_calls.orelse.value else actions(value)  # type: ignore[union-attr]

    texts = {
        "subtask_prompt": (
            _Pattern(template.subtask_prompt.node),
            {"memory_context": memory_context},
        ),
        "extraction_prompt": (
            _Pattern(template.extraction_prompt.node),
            {"actions_text": actions_text},
        ),
    }

    def reduce(content: str) -> Any:
        if (found := plan.fullmatch(content)) is not None:
            values = found.groupdict()
            return {
                "decomposition_prompt": {
                    "system_policy": digest(values["system_policy"]),
                    "user_task": digest(values["user_task"]),
                    "tools": tools(values["tools"]),
                }
            }
        for name, (pattern, nested) in texts.items():
            if (reduced := pattern.reduce(content, nested)) is not None:
                return {name: reduced}
        return content

    return reduce


def reduce_plan(template: DecomposingTemplate, plan: str | None) -> Any:
    """The plan text reduced to the strategy and rationale filled into it."""
    return None if plan is None else _Pattern(template.full_plan.node).reduce(plan, {})


def reduce_summary(template: DecomposingTemplate, summary: str) -> Any:
    """A subtask's summary: the model's text (its sha256), or one of upstream's texts (a failed
    subtask's, the fallback with the count of calls) reduced to what was filled in."""
    for name in ("error_summary", "summary_fallback"):
        found = _Pattern(getattr(template, name).node).reduce(summary, {})
        if found is not None:
            return {name: found}
    return digest(summary)


def reduce_final(template: DecomposingTemplate, answer: str, errors: Sequence[bool]) -> Any:
    """The composed final answer of subtasks that failed with an error or not (``errors``),
    reduced to what was filled in; the status mark as the branch it is."""
    heading, summary, error, last = (text.node for text in template.final_parts)
    parts: list[ast.expr] = [template.final_head.node]
    for failed in errors:
        parts += [heading, summary, *([error] if failed else [])]
    parts += [last] if errors else []
    status = template.final_status.node
    assert isinstance(status, ast.IfExp) and isinstance(status.body, ast.Constant)
    ok = status.body.value
    summaries: Reducer = lambda value: reduce_summary(template, value)  # noqa: E731
    nested = {"status": lambda value: value == ok, "result.summary": summaries}
    return _Pattern(ast.List(elts=parts)).reduce(
        answer, nested | {"results[-1].summary": summaries}
    )


def normalise_decomposing(
    bodies: Sequence[Mapping[str, Any]], *, template: DecomposingTemplate, gym_url: str
) -> list[dict[str, Any]]:
    """Each request reduced as the module says; ``role``: planner, sub-agent or memory."""
    reduce = reduce_text(template)
    never = "\x00never"  # no planner_react text to recognise
    reduced = normalise_requests(bodies, prompt_template=never, handoff=(never,), gym_url=gym_url)
    for request in reduced:
        for message in request["messages"]:
            if isinstance(message.get("content"), str):
                message["content"] = reduce(message["content"])
        request["messages_sha256"] = digest(request["messages"])
        first = request["messages"][0].get("content")
        if request["tool_names"]:
            request["role"] = "sub-agent"
        elif isinstance(first, dict) and "decomposition_prompt" in first:
            request["role"] = "planner"
        else:
            request["role"] = "memory"
    return reduced


def our_outcome(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the differential compares of one of our rollout records."""
    decomposition = record.get("decomposition") or {}
    return {
        "plan": record.get("plan"),
        "final_answer": record["final_answer"] or "",
        "tool_calls": [
            [c["name"], json.loads(c["arguments"])]
            for t in record["turns"]
            for c in t["tool_calls"]
        ],
        "results": [
            {k: r[k] for k in ("success", "summary", "error", "memory")}
            for r in decomposition.get("results") or ()
        ],
    }


def without_error_wording(outcome: Mapping[str, Any]) -> dict[str, Any]:
    """``outcome`` with each failed subtask's error replaced by ``<error>`` wherever it shows
    (its result, its summary, the final answer): upstream words it as the ``openai``
    exception does, we as the endpoint did."""
    final, results = outcome["final_answer"], []
    for result in outcome["results"]:
        error = result["error"]
        if error:
            final = final.replace(error, "<error>")
            result = dict(
                result, error="<error>", summary=result["summary"].replace(error, "<error>")
            )
        results.append(result)
    return dict(outcome, final_answer=final, results=results)


def reduced_outcome(template: DecomposingTemplate, outcome: Mapping[str, Any]) -> dict[str, Any]:
    """What the golden keeps of a run's outcome: upstream's texts reduced to what was filled in."""
    outcome = without_error_wording(outcome)
    errors = [r["error"] is not None for r in outcome["results"]]
    final = outcome["final_answer"]
    return {
        "plan": reduce_plan(template, outcome["plan"]),
        "final_answer": reduce_final(template, final, errors) if outcome["results"] else final,
        "tool_calls": outcome["tool_calls"],
        "results": [
            {
                "success": r["success"],
                "summary": reduce_summary(template, r["summary"]),
                "error": r["error"],
                "memory": r["memory"],
            }
            for r in outcome["results"]
        ],
    }
