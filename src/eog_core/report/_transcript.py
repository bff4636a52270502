"""One rollout as the page needs it: a short row for the table, a detail for the transcript viewer.

Records are read defensively: unknown keys are ignored, ``stop_reason`` and
``failure_kind`` are any string, a missing or oddly typed field shows as absent.
Every text of a transcript longer than :data:`OBSERVATION_LIMIT` characters but
the task's prompts is cut (the cut says how much was left out), and so is a list or object whose JSON
is longer (a verifier's rows), shown as its cut JSON text; a turn's ``usage``
keeps its token counts only. A state diff (the record's ``damage.deltas``) shows its first
:data:`DELTA_LIMIT` changed rows, the damaging ones first when it is longer, each value
cut as above. So a report of thousands of rollouts stays small
enough to open fast; the full record stays in ``rollouts.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from eog_core.metrics import RolloutUsage

__all__ = [
    "DELTA_LIMIT",
    "OBSERVATION_LIMIT",
    "rollout_detail",
    "rollout_id",
    "rollout_row",
    "turn_usage",
    "well_formed",
]

OBSERVATION_LIMIT = 2000
#: Deltas of a rollout's ``damage`` shown in its transcript (the damaging ones first); the rest
#: are counted, and are in ``rollouts.jsonl``.
DELTA_LIMIT = 200


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _cut(text: Any, limit: int = OBSERVATION_LIMIT) -> str | None:
    if not isinstance(text, str):
        return None
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit} more characters in rollouts.jsonl]"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): a deep link must be
    valid Unicode (``encodeURIComponent`` throws on a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def rollout_id(run: str, record: Mapping[str, Any]) -> str:
    """The deep-link id of a rollout: ``RUN/MODE/DOMAIN/TASK/REPEAT``, ``RUN`` the run's name."""
    return well_formed(
        "/".join(
            str(part)
            for part in (
                run,
                record.get("mode"),
                record.get("domain"),
                record.get("task_id"),
                record.get("repeat"),
            )
        )
    )


def _success(policy: Any) -> bool | None:
    if not isinstance(policy, Mapping) or policy.get("evaluation_completed") is False:
        return None
    success = policy.get("success")
    return success if isinstance(success, bool) else None


def rollout_row(
    run: int,
    record: Mapping[str, Any],
    usage: RolloutUsage | None,
    cost: float | None,
    *,
    run_name: str,
) -> dict[str, Any]:
    """The table row: identity, outcome under each policy (None = not evaluated), effort."""
    row: dict[str, Any] = {
        "id": rollout_id(run_name, record),
        "run": run,
        "task_id": str(record.get("task_id")),
        "domain": str(record.get("domain")),
        "mode": str(record.get("mode")),
        "repeat": record.get("repeat"),
        "status": _short(_text(record.get("status"))),
        "strict": _success(record),
        "parity": _success(record.get("parity")),
        "failure_kind": _short(_text(record.get("failure_kind"))),
        "stop_reason": _short(_text(record.get("stop_reason"))),
        "cost": cost,
    }
    damage = record.get("damage")
    if isinstance(damage, Mapping):  # no key without capture: the rows are as before
        row["damage"] = _short(_text(damage.get("outcome")))
    if usage is not None:
        row |= {
            "turns": usage.turns,
            "calls": usage.tool_calls,
            "tokens": usage.input_tokens + usage.output_tokens,
            "duration_ms": usage.duration_ms,
        }
    return row


def _short(value: Any) -> Any:
    """A long text cut (:func:`_cut`); a list or object whose JSON is long, its JSON text cut;
    anything else as it is."""
    kind = type(value)
    if kind is str:
        return _cut(value) if len(value) > OBSERVATION_LIMIT else value
    if (kind is list or kind is dict) and value:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            return "… [a value nested too deep to show: it is in rollouts.jsonl]"
        return _cut(text) if len(text) > OBSERVATION_LIMIT else value
    return value


_TOKEN_COUNTS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def turn_usage(usage: Any) -> dict[str, int] | None:
    """A turn's token counts (what the page shows); any other key of ``usage`` stays out."""
    if not isinstance(usage, Mapping):
        return None
    counts = {key: usage[key] for key in _TOKEN_COUNTS if type(usage.get(key)) is int}
    return counts or None


# The known keys only, as dict literals (the fastest way CPython builds them): a newer
# record's per-turn ``token_ids`` or ``logprobs`` stay out of the page.
def _call(c: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": _short(c.get("name")),
        "arguments": _short(c.get("arguments")),
        "observation": _short(c.get("observation")),
        "latency_ms": _number(c.get("latency_ms")),
        "is_error": c.get("is_error") is True,
        "gym": _short(c.get("gym")),
    }


def _turns(turns: Any) -> list[dict[str, Any]]:
    found = []
    for turn in turns if isinstance(turns, list) else ():
        if not isinstance(turn, dict):
            continue
        calls = turn.get("tool_calls")
        role = {"role": _short(_text(turn.get("role")))} if "role" in turn else {}
        if "subtask" in turn:  # decomposing: the sub-agent's subtask, its memory question
            role |= {"subtask": _short(turn.get("subtask"))}
            role |= {"memory_extraction": bool(turn.get("memory_extraction"))}
        found.append(
            role
            | {
                "turn": _short(turn.get("turn")),
                "text": _short(turn.get("text")),
                "reasoning": _short(turn.get("reasoning")),
                "finish_reason": _short(turn.get("finish_reason")),
                "model_latency_ms": _number(turn.get("model_latency_ms")),
                "usage": turn_usage(turn.get("usage")),
                "tool_calls": [
                    _call(c)
                    for c in (calls if isinstance(calls, list) else ())
                    if isinstance(c, dict)
                ],
            }
        )
    return found


def _result(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": _short(r.get("name")),
        "kind": _short(r.get("kind")),
        "gym": _short(r.get("gym")),
        "query": _short(r.get("query")),
        "expected": _short(r.get("expected")),
        "actual": _short(r.get("actual")),
        "comparison_type": _short(r.get("comparison_type")),
        "passed": r.get("passed"),
        "counted": r.get("counted"),
        "error": _short(r.get("error")),
        "details": _short(r.get("details")),
        "failure_kind": _short(r.get("failure_kind")),
    }


def _verdicts(policy: Any) -> list[dict[str, Any]]:
    results = policy.get("results") if isinstance(policy, Mapping) else None
    if not isinstance(results, list):
        return []
    return [_result(result) for result in results if isinstance(result, dict)]


def _delta(d: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "gym": _short(_text(d.get("gym"))),
        "table": _short(_text(d.get("table"))),
        "op": _short(_text(d.get("op"))),
        "key": _short(d.get("key")),
        "columns": _short(d.get("columns")),
        "before": _short(d.get("before")),
        "after": _short(d.get("after")),
        "verdict": _short(_text(d.get("verdict"))),
        "damaged_columns": _short(d.get("damaged_columns")),
        "severity": _short(_text(d.get("severity"))),
        "dollars": _number(d.get("dollars")),
    }


def _damage(damage: Any) -> dict[str, Any] | None:
    """A record's ``damage`` for the transcript: its outcome, price and (cut) diff."""
    if not isinstance(damage, Mapping):
        return None
    deltas = [d for d in damage.get("deltas") or () if isinstance(d, Mapping)]
    if len(deltas) > DELTA_LIMIT:  # the damage first, so a cut never hides it
        deltas.sort(key=lambda d: d.get("verdict") != "damage")
    return {
        "outcome": _short(_text(damage.get("outcome"))),
        "severity": _short(_text(damage.get("severity"))),
        "dollars": _number(damage.get("dollars")),
        "deltas": [_delta(d) for d in deltas[:DELTA_LIMIT]],
        "more": max(0, len(deltas) - DELTA_LIMIT),
    }


def rollout_detail(record: Mapping[str, Any], task: Any = None) -> dict[str, Any]:
    """The transcript: prompts (from the task when given), turns, final answer, both verdict
    tables, the state diff when the record has a ``damage`` verdict, and with ``planner_react``
    the plan and the executor's user message (each turn then names its role); with
    ``decomposing`` the plan, the subtasks with their results and the working memory (each
    sub-agent's turns name it and their subtask)."""
    parity = record.get("parity")
    detail = {
        "system_prompt": _text(getattr(task, "system_prompt", None)),  # the task's: shown whole
        "user_prompt": _text(getattr(task, "user_prompt", None)),
        "turns": _turns(record.get("turns")),
        "final_answer": _cut(record.get("final_answer")),
        "failure_reason": _cut(record.get("failure_reason")),
        "context_overflow": _cut(record.get("context_overflow")),
        "model": _cut(record.get("model")),
        "started_at": _cut(record.get("started_at")),
        "verdicts": {"strict": _verdicts(record), "parity": _verdicts(parity)},
        "pass_rate": {
            "strict": _number(record.get("pass_rate")),
            "parity": _number(parity.get("pass_rate")) if isinstance(parity, Mapping) else None,
        },
    }
    if (damage := _damage(record.get("damage"))) is not None:
        detail["damage"] = damage
    if record.get("orchestrator") is not None:  # planner_react: the plan, and what it became
        detail["orchestrator"] = _cut(record.get("orchestrator"))
        detail["plan"] = _text(record.get("plan"))  # shown whole, as the prompts
        detail["executor_user_prompt"] = _text(record.get("executor_user_prompt"))
    if isinstance(decomposition := record.get("decomposition"), Mapping):
        detail |= _decomposition(decomposition)
    return detail


def _decomposition(decomposition: Mapping[str, Any]) -> dict[str, Any]:
    """``decomposing``: each subtask with its sub-agent's result (and why its memory answer kept
    nothing), the working memory, and why the planner's answers held no decomposition."""
    results = [r for r in decomposition.get("results") or () if isinstance(r, Mapping)]
    subtasks = []
    for index, subtask in enumerate(decomposition.get("subtasks") or ()):
        if not isinstance(subtask, Mapping):
            continue
        result = results[index] if index < len(results) else {}  # one per subtask run, in order
        subtasks.append(
            {
                "id": _short(subtask.get("id")),
                "title": _short(subtask.get("title")),
                "description": _short(subtask.get("description")),
                "dependencies": _short(subtask.get("dependencies")),
                "ran": bool(result),
                "success": result.get("success"),
                "stop_reason": _short(result.get("stop_reason")),
                "summary": _short(result.get("summary")),
                "error": _short(result.get("error")),
                "memory": _short(result.get("memory")),
                "memory_error": _short(_text(result.get("memory_error"))),
            }
        )
    errors = decomposition.get("errors")
    return {
        "subtasks": subtasks,
        "working_memory": _short(decomposition.get("working_memory")),
        "decomposition_errors": [_short(e) for e in errors] if isinstance(errors, list) else [],
    }
