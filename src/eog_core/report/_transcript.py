"""One rollout as the page needs it: a short row for the table, a detail for the transcript viewer.

Records are read defensively: unknown keys are ignored, ``stop_reason`` and
``failure_kind`` are any string, a missing or oddly typed field shows as absent.
Long observations are cut at :data:`OBSERVATION_LIMIT` characters (the cut
says how much was left out) so a report of thousands of rollouts stays small
enough to open fast; the full text stays in ``rollouts.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eog_core.metrics import RolloutUsage

__all__ = ["OBSERVATION_LIMIT", "rollout_detail", "rollout_id", "rollout_row"]

OBSERVATION_LIMIT = 4000
_VERDICT_KEYS = ("name", "kind", "gym", "query", "expected", "actual", "comparison_type", "passed",
                 "counted", "error", "details", "failure_kind")


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


def rollout_id(run: int, record: Mapping[str, Any]) -> str:
    """The deep-link id of a rollout: ``RUN/MODE/DOMAIN/TASK/REPEAT``."""
    return "/".join(str(part) for part in (run, record.get("mode"), record.get("domain"),
                                           record.get("task_id"), record.get("repeat")))


def _success(policy: Any) -> bool | None:
    if not isinstance(policy, Mapping) or policy.get("evaluation_completed") is False:
        return None
    success = policy.get("success")
    return success if isinstance(success, bool) else None


def rollout_row(run: int, record: Mapping[str, Any], usage: RolloutUsage | None,
                cost: float | None) -> dict[str, Any]:
    """The table row: identity, outcome under each policy (None = not evaluated), effort."""
    row: dict[str, Any] = {
        "id": rollout_id(run, record), "run": run, "task_id": str(record.get("task_id")),
        "domain": str(record.get("domain")), "mode": str(record.get("mode")),
        "repeat": record.get("repeat"), "status": _text(record.get("status")),
        "strict": _success(record), "parity": _success(record.get("parity")),
        "failure_kind": _text(record.get("failure_kind")),
        "stop_reason": _text(record.get("stop_reason")), "cost": cost}
    if usage is not None:
        row |= {"turns": usage.turns, "calls": usage.tool_calls,
                "tokens": usage.input_tokens + usage.output_tokens,
                "duration_ms": usage.duration_ms}
    return row


def _call(call: Any) -> dict[str, Any] | None:
    if not isinstance(call, Mapping):
        return None
    return {"name": _text(call.get("name")), "arguments": _cut(call.get("arguments")),
            "observation": _cut(call.get("observation")), "latency_ms": _number(call.get("latency_ms")),
            "is_error": call.get("is_error") is True, "gym": _text(call.get("gym")),
            "refused": _text(call.get("refused"))}


def _turn(turn: Any) -> dict[str, Any] | None:
    if not isinstance(turn, Mapping):
        return None
    calls = turn.get("tool_calls")
    return {"turn": turn.get("turn"), "text": _cut(turn.get("text")),
            "reasoning": _cut(turn.get("reasoning")), "finish_reason": _text(turn.get("finish_reason")),
            "model_latency_ms": _number(turn.get("model_latency_ms")),
            "usage": turn.get("usage") if isinstance(turn.get("usage"), Mapping) else None,
            "tool_calls": [c for c in map(_call, calls if isinstance(calls, list) else []) if c]}


def _verdicts(policy: Any) -> list[dict[str, Any]]:
    results = policy.get("results") if isinstance(policy, Mapping) else None
    if not isinstance(results, list):
        return []
    return [{key: result.get(key) for key in _VERDICT_KEYS}
            for result in results if isinstance(result, Mapping)]


def rollout_detail(record: Mapping[str, Any], task: Any = None) -> dict[str, Any]:
    """The transcript: prompts (from the task when given), turns, final answer, both verdict tables."""
    turns = record.get("turns")
    parity = record.get("parity")
    return {
        "system_prompt": _text(getattr(task, "system_prompt", None)),
        "user_prompt": _text(getattr(task, "user_prompt", None)),
        "turns": [t for t in map(_turn, turns if isinstance(turns, list) else []) if t],
        "final_answer": _cut(record.get("final_answer")),
        "failure_reason": _cut(record.get("failure_reason")),
        "context_overflow": _text(record.get("context_overflow")),
        "model": _text(record.get("model")),
        "started_at": _text(record.get("started_at")),
        "verdicts": {"strict": _verdicts(record), "parity": _verdicts(parity)},
        "pass_rate": {"strict": _number(record.get("pass_rate")),
                      "parity": _number(parity.get("pass_rate")) if isinstance(parity, Mapping) else None},
    }
