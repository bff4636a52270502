"""``decomposing``'s data: the planner's decomposition as upstream reads it, and the texts
filled from it (upstream's, :class:`~eog_core.run._decomposing_source.DecomposingTemplate`).

Upstream's rules, in our words: the planner's answer is cut to its JSON (a fenced
```` ```json ```` block, else any fenced block, else from the first ``{`` to the last ``}``,
else the whole answer when it is an object), which must parse to an object with
``strategic_plan`` and ``subtasks``; every subtask needs ``id``, ``title`` and
``description``; there must be at least one; a dependency must name an earlier subtask.
Upstream retries a decomposition that breaks these rules; one of the wrong *types* (a
subtask that is not an object, an ``id`` that cannot be compared) escapes its retries as a
crash of the plan phase: here it is one more :class:`BadDecomposition`, retried the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from eog_core.run._decomposing_source import DecomposingTemplate

__all__ = [
    "BadDecomposition",
    "Decomposition",
    "SubtaskResult",
    "decomposition_prompt",
    "extract_json",
    "extraction_prompt",
    "final_output",
    "memory_text",
    "parse_decomposition",
    "parse_memory",
    "subtask_prompt",
]


class BadDecomposition(ValueError):
    """The planner's answer is not a decomposition upstream would run."""


@attrs.frozen(kw_only=True)
class Decomposition:
    """The plan (upstream's plan text: the strategy with its rationale) and its subtasks."""

    plan: str
    strategic_plan: Any
    rationale: Any
    subtasks: tuple[dict[str, Any], ...]


@attrs.frozen(kw_only=True)
class SubtaskResult:
    """What one sub-agent did, as upstream's final output and working memory use it."""

    subtask_id: Any
    title: Any
    success: bool
    summary: str
    stop_reason: str
    memory: dict[str, Any] = attrs.field(factory=dict)
    tools_used: tuple[str, ...] = ()
    error: str | None = None
    memory_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "subtask_id": self.subtask_id,
            "title": self.title,
            "success": self.success,
            "stop_reason": self.stop_reason,
            "summary": self.summary,
            "memory": self.memory,
            "tools_used": list(self.tools_used),
            "error": self.error,
            "memory_error": self.memory_error,
        }


def extract_json(content: str) -> str:
    """The JSON part of a model's answer, as upstream cuts it; ``ValueError`` when none."""
    content = content.strip()
    for fence in ("```json", "```"):
        if fence in content:
            start = content.find(fence) + len(fence)
            end = content.find("```", start)
            if end != -1:
                return content[start:end].strip()
    if not content.startswith("{"):
        start, end = content.find("{"), content.rfind("}")
        if start != -1 and end != -1:
            return content[start : end + 1]
    if content.startswith("{") and content.endswith("}"):
        return content
    raise ValueError("no JSON object in the answer")


def _subtasks(parsed: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    subtasks = tuple(
        {
            "id": data["id"],
            "title": data["title"],
            "description": data["description"],
            "rationale": data.get("rationale", ""),
            "dependencies": data.get("dependencies", []),
            "required_tools": data.get("required_tools", []),
            "expected_outcome": data.get("expected_outcome", ""),
        }
        for data in parsed.get("subtasks", [])
    )
    if not subtasks:
        raise ValueError("no subtasks")
    ids = {subtask["id"] for subtask in subtasks}
    for subtask in subtasks:
        for dependency in subtask["dependencies"]:
            if dependency not in ids:
                raise ValueError(f"subtask {subtask['id']} depends on {dependency}, not a subtask")
            if dependency >= subtask["id"]:
                raise ValueError(f"subtask {subtask['id']} depends on a later one, {dependency}")
    return subtasks


def parse_decomposition(text: str, template: DecomposingTemplate) -> Decomposition:
    """The decomposition in the planner's answer; :class:`BadDecomposition` says why not."""
    try:
        parsed = json.loads(extract_json(text))
        if not isinstance(parsed, dict):
            raise ValueError(f"the JSON is a {type(parsed).__name__}, not an object")
        for key in ("strategic_plan", "subtasks"):
            if key not in parsed:
                raise ValueError(f"no {key!r} key")
        subtasks = _subtasks(parsed)
    except KeyError as exc:
        raise BadDecomposition(f"a subtask has no {exc}") from exc
    except (ValueError, TypeError, AttributeError) as exc:
        raise BadDecomposition(str(exc)) from exc
    strategic_plan, rationale = parsed.get("strategic_plan", ""), parsed.get("rationale", "")
    plan = template.full_plan.render({"strategic_plan": strategic_plan, "rationale": rationale})
    return Decomposition(
        plan=plan, strategic_plan=strategic_plan, rationale=rationale, subtasks=subtasks
    )


def parse_memory(text: str) -> tuple[dict[str, Any], str | None]:
    """What a sub-agent's memory answer adds (upstream: nothing when it is not a JSON object),
    and why nothing when it could not be read."""
    try:
        found = json.loads(extract_json(text))
    except ValueError as exc:
        return {}, str(exc)
    if not isinstance(found, dict):
        return {}, f"the JSON is a {type(found).__name__}, not an object"
    return found, None


def decomposition_prompt(
    template: DecomposingTemplate,
    system_prompt: str,
    user_prompt: str,
    tools: Sequence[Mapping[str, Any]],
) -> str:
    """The one user message the planner is sent: each tool on a line of name and description."""
    lines = "\n".join(str(template.tool_line.render({"t": tool})) for tool in tools)
    return template.decomposition.format(
        system_policy=system_prompt, user_task=user_prompt, tools=lines
    )


def memory_text(template: DecomposingTemplate, memory: Mapping[str, Any]) -> str:
    """The working memory as a sub-agent's prompt shows it."""
    if not memory:
        return template.memory_empty
    dumped = json.dumps(dict(memory), indent=2)
    return "\n".join(template.memory_parts.render({"json.dumps(self.data, indent=2)": dumped}))


def _subtask_values(subtask: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("title", "description", "rationale", "expected_outcome")
    return {f"self.subtask.{key}": subtask.get(key) for key in keys}


def subtask_prompt(
    template: DecomposingTemplate, subtask: Mapping[str, Any], memory: Mapping[str, Any]
) -> str:
    """The sub-agent's user message: its subtask and the working memory so far."""
    values = _subtask_values(subtask) | {"memory_context": memory_text(template, memory)}
    return str(template.subtask_prompt.render(values))


def extraction_prompt(
    template: DecomposingTemplate,
    subtask: Mapping[str, Any],
    actions: Sequence[tuple[str, Any]],
) -> str:
    """The question after a subtask: what to keep in memory, with every call it made (its
    tool and the MCP result upstream's client returned; each reached its gym)."""
    lines = [
        str(
            template.action_line.render(
                {
                    "tool_name": name,
                    "success": True,
                    "result_data": result,
                    "json.dumps(result_data, indent=2)": json.dumps(result, indent=2)
                    if result
                    else None,
                }
            )
        )
        for name, result in actions
    ]
    joined = {"actions_summary": lines, "'\\n'.join(actions_summary)": "\n".join(lines)}
    values = _subtask_values(subtask) | {"actions_text": template.actions_text.render(joined)}
    return str(template.extraction_prompt.render(values))


def final_output(template: DecomposingTemplate, results: Sequence[SubtaskResult]) -> str:
    """Upstream's final answer: a heading per subtask with its summary (and error), then the
    last subtask's summary."""
    parts = list(template.final_head.render({}))
    heading, summary, error, last = template.final_parts
    for result in results:
        values: dict[str, Any] = {
            "result.success": result.success,
            "result.subtask_id": result.subtask_id,
            "result.title": result.title,
            "result.summary": result.summary,
            "result.error": result.error,
        }
        values["status"] = template.final_status.render(values)
        parts += [heading.render(values), summary.render(values)]
        if result.error:
            parts.append(error.render(values))
    if results:
        parts.append(last.render({"results[-1].summary": results[-1].summary}))
    return "\n".join(str(part) for part in parts)
