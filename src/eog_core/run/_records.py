"""The rollout record: one JSON line per rollout, readable by ``eog-core score``.

A record is a verdict line of :mod:`eog_core.metrics` (strict verdict at the top,
parity nested under ``parity``) plus what the rollout did: the transcript with
per-turn timestamps, token usage, model and tool latencies, the final answer.
A rollout that could not be evaluated has ``evaluation_completed: false`` and a
``failure_kind``; every rate leaves it out instead of scoring it 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from eog_core._plumbing import iso_time
from eog_core.run._loop import AgentRun
from eog_core.tasks import MISSING_MODE, Task
from eog_core.verify import TaskVerdict

__all__ = [
    "RECORD_FORMAT",
    "IncompleteKind",
    "RolloutKey",
    "evaluated_record",
    "incomplete_record",
    "record_key",
    "rollout_key",
    "safe_file_part",
]

RECORD_FORMAT = "eog_core.rollout/1"

#: Why a rollout could not be evaluated (besides the verifier engine's own kinds).
IncompleteKind = Literal[
    "gym_unreachable",
    "gym_error",
    "seed_failed",
    "model_unreachable",
    "model_error",
    "malformed_tool_call",
    "no_plan",
    "bad_decomposition",
    "config_error",
    "verifier_error",
    "judge_error",
    "no_verifiers",
    "abandoned",
]
"""``abandoned``: an MCP gateway rollout given up by its agent or idle past its TTL; ``no_plan``:
the ``planner_react`` planner answered without a plan; ``bad_decomposition``: no answer of the
``decomposing`` planner held a decomposition."""

#: (mode, domain, task_id, repeat): what resumption skips when already evaluated.
RolloutKey = tuple[str, str, str, int]


def _identity(task: Task) -> tuple[str, str, str]:
    return (task.mode or MISSING_MODE, task.domain or "unknown", task.task_id or "task")


def rollout_key(task: Task, repeat: int) -> RolloutKey:
    return (*_identity(task), repeat)


def record_key(record: Mapping[str, Any]) -> RolloutKey:
    return (
        str(record["mode"]),
        str(record["domain"]),
        str(record["task_id"]),
        int(record["repeat"]),
    )


def safe_file_part(text: str) -> str:
    """A string fit for a file name (upstream's ``results_<mode>__<domain>__<id>.json``)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text) or "_"


def _head(
    task: Task,
    repeat: int,
    model: Mapping[str, Any],
    attempts: int,
    started: float,
    finished: float,
) -> dict[str, Any]:
    mode, domain, task_id = _identity(task)
    return {
        "format": RECORD_FORMAT,
        "task_id": task_id,
        "domain": domain,
        "mode": mode,
        "repeat": repeat,
        "model": model.get("model"),
        "api": model.get("api"),
        "attempts": attempts,
        "started_at": iso_time(started),
        "finished_at": iso_time(finished),
        "duration_ms": round((finished - started) * 1000, 3),
    }


def _agent_fields(agent: AgentRun | None) -> dict[str, Any]:
    if agent is None:
        return {
            "stop_reason": None,
            "final_answer": None,
            "tools_used": [],
            "tools_offered": None,
            "num_turns": 0,
            "num_tool_calls": 0,
            "usage": None,
            "model_latency_ms": None,
            "tool_latency_ms": None,
            "turns": [],
        }
    fields: dict[str, Any] = {}
    if (error := agent.malformed_tool_call) is not None:
        fields["malformed_tool_call"] = {
            "status": error.status,
            "detail": error.detail,
            "raw_text": error.raw_text,
            "attempts": error.attempts,
        }
    if agent.orchestrator != "react":  # react records stay as they were
        fields["orchestrator"] = agent.orchestrator
        fields["plan"] = agent.plan
        if agent.orchestrator == "planner_react":
            fields["executor_user_prompt"] = agent.user_prompt
        fields["usage_by_role"] = {
            role: usage.to_dict() for role, usage in (agent.usage_by_role or {}).items()
        }
        if agent.decomposition is not None:
            fields["decomposition"] = dict(agent.decomposition)
    return fields | {
        "stop_reason": agent.stop_reason,
        "context_overflow": agent.overflow_detail,
        "final_answer": agent.final_answer,
        "tools_used": list(agent.tools_used),
        "tools_offered": agent.tools_offered,
        "num_turns": len(agent.turns),
        "num_tool_calls": sum(len(t["tool_calls"]) for t in agent.turns),
        "usage": agent.usage.to_dict(),
        "model_latency_ms": round(agent.model_latency_ms, 3),
        "tool_latency_ms": round(agent.tool_latency_ms, 3),
        "turns": list(agent.turns),
    }


def _verdict_fields(verdict: TaskVerdict) -> dict[str, Any]:
    data = verdict.to_dict(detailed=True)  # parity: also upstream's run record keys
    for key in ("task_id", "domain", "mode"):
        data.pop(key)
    data["num_passed"] = verdict.num_passed
    return data


def evaluated_record(
    task: Task,
    repeat: int,
    *,
    model: Mapping[str, Any],
    agent: AgentRun,
    strict: TaskVerdict,
    parity: TaskVerdict,
    attempts: int,
    started: float,
    finished: float,
) -> dict[str, Any]:
    """A record of a rollout that ran and was verified (its strict verdict may still be incomplete)."""
    head = _head(task, repeat, model, attempts, started, finished)
    status = "evaluated" if strict.evaluation_completed else "incomplete"
    return (
        head
        | {"status": status}
        | _verdict_fields(strict)
        | {
            "failure_reason": None if strict.evaluation_completed else _first_error(strict),
            "parity": _verdict_fields(parity),
        }
        | _agent_fields(agent)
    )


def _first_error(verdict: TaskVerdict) -> str | None:
    return next((r.error or r.details for r in verdict.results if r.failure_kind), None)


def incomplete_record(
    task: Task,
    repeat: int,
    *,
    model: Mapping[str, Any],
    kind: IncompleteKind,
    reason: str,
    attempts: int,
    started: float,
    finished: float,
    agent: AgentRun | None = None,
) -> dict[str, Any]:
    """A record of a rollout that could not be evaluated: not a 0, a gap with a reason."""
    head = _head(task, repeat, model, attempts, started, finished)
    unscored = {
        "success": False,
        "reward": 0.0,
        "pass_rate": 0.0,
        "evaluation_completed": False,
        "failure_kind": kind,
    }
    return (
        head
        | {"status": "incomplete", "policy": "strict"}
        | unscored
        | {
            "num_defined": len(task.verifiers),
            "num_scored": 0,
            "num_passed": 0,
            "failure_reason": reason,
            "parity": {"policy": "parity", **unscored},
        }
        | _agent_fields(agent)
    )
