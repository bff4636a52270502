"""What verifying a task yields: each verifier's result and the task's verdict.

Plain records (the engine in ``_engine.py`` builds them); their dict, row and
upstream-record forms live here with them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from eog_core.tasks import MISSING_MODE

__all__ = ["FailureKind", "TaskVerdict", "ToolLatency", "VerifierResult"]

FailureKind = Literal[
    "config_error", "verifier_error", "gym_unreachable", "judge_error", "no_verifiers", "run_error"
]


@attrs.frozen(kw_only=True)
class VerifierResult:
    """The result of one defined verifier, in definition order.

    ``upstream`` is the result dict exactly as upstream records it. ``counted``
    is False for a verifier parity skipped (unknown gym) or that a later
    verifier of the same name overwrote (``overwritten``: its name keeps this
    one's position in upstream's results, the value is the later one's).
    """

    index: int
    name: str
    kind: str
    gym: str | None
    passed: bool
    counted: bool = True
    overwritten: bool = False
    expected: Any = None
    actual: Any = None
    comparison_type: str | None = None
    details: str | None = None
    error: str | None = None
    query: str | None = None
    failure_kind: FailureKind | None = None
    upstream: Mapping[str, Any] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "gym": self.gym,
            "passed": self.passed,
            "counted": self.counted,
            "expected": self.expected,
            "actual": self.actual,
            "comparison_type": self.comparison_type,
            "details": self.details,
            "error": self.error,
            "query": self.query,
            "failure_kind": self.failure_kind,
        }


@attrs.frozen(kw_only=True)
class ToolLatency:
    """How long one tool call of the rollout took, end to end at the client."""

    tool: str
    gym: str | None
    latency_ms: float

    def to_dict(self) -> dict[str, Any]:
        """NeMo Gym's shape: ``{"tool", "gym", "latency_ms"}``."""
        return {"tool": self.tool, "gym": self.gym, "latency_ms": round(self.latency_ms, 3)}


@attrs.frozen(kw_only=True)
class TaskVerdict:
    """How a rollout scored: success, reward, and every verifier's result.

    ``run_error`` (parity only) is the error upstream records instead of any
    result: its run of the task failed (``failure_kind="run_error"``).

    ``tool_latencies_ms`` holds the rollout's tool calls in order when a
    ``TaskSession`` verified it; ``to_dict`` gives them (when there are any)
    except in the plain parity form, which is upstream's record exactly.
    """

    policy: str
    task_id: str | None
    success: bool
    domain: str | None = None
    mode: str | None = None
    reward: float
    pass_rate: float
    num_defined: int
    num_scored: int
    num_passed: int
    results: tuple[VerifierResult, ...]
    evaluation_completed: bool = True
    failure_kind: FailureKind | None = None
    run_error: str | None = None
    tool_latencies_ms: tuple[ToolLatency, ...] = ()

    def verification_results(self) -> dict[str, Any]:
        """Upstream's name-keyed results (parity collapses; strict keeps every verifier).

        In parity a repeated name keeps its first position and its last value,
        as filling upstream's dict does.
        """
        out: dict[str, Any] = {}
        for result in self.results:
            if not (result.counted or result.overwritten):
                continue
            name, copy = result.name, 2
            while self.policy != "parity" and name in out:
                name, copy = f"{result.name}#{copy}", copy + 1
            out[name] = dict(result.upstream)
        return out

    def upstream_record(self) -> dict[str, Any]:
        """Upstream's run record, less what only the rollout knows (number, times, conversation).

        ``{"verification_results", "verification_summary", "overall_success"}``
        or, for a run error, ``{"error": ..., "overall_success": false}``.
        """
        if self.run_error is not None:
            return {"error": self.run_error, "overall_success": False}
        results = self.verification_results()
        total = len(results)
        passed = sum(1 for value in results.values() if value.get("passed", False))
        return {
            "verification_results": results,
            "verification_summary": {
                "total": total,
                "passed": passed,
                "failed": total - passed,
                "pass_rate": passed / total if total > 0 else 0.0,
            },
            "overall_success": all(value["passed"] for value in results.values()),
        }

    def to_dict(self, *, repeat: int | None = None, detailed: bool = False) -> dict[str, Any]:
        """A JSON-ready form.

        A parity verdict is exactly :meth:`upstream_record`; a strict one is
        our fields plus upstream's ``verification_results`` and
        ``verification_summary``. ``detailed`` gives our fields for parity too
        (followed by the keys of :meth:`upstream_record`). With ``repeat`` it
        is one detailed line of the verdict JSONL format that ``eog-core
        score`` and ``eog-core compare`` read.
        """
        if repeat is None and not detailed and self.policy == "parity":
            return self.upstream_record()
        head: dict[str, Any] = {
            "task_id": self.task_id,
            "domain": self.domain,
            "mode": self.mode or MISSING_MODE,
        }
        if repeat is not None:
            head["repeat"] = repeat
        latencies = (
            {"tool_latencies_ms": [t.to_dict() for t in self.tool_latencies_ms]}
            if self.tool_latencies_ms
            else {}
        )
        body = (
            head
            | {
                "policy": self.policy,
                "success": self.success,
                "reward": self.reward,
                "pass_rate": self.pass_rate,
                "num_defined": self.num_defined,
                "num_scored": self.num_scored,
                "num_passed": self.num_passed,
                "evaluation_completed": self.evaluation_completed,
                "failure_kind": self.failure_kind,
                "results": [r.to_dict() for r in self.results],
            }
            | latencies
        )
        if self.policy == "parity":
            return body | self.upstream_record()
        return body | {
            "verification_results": self.verification_results(),
            "verification_summary": {
                "total": self.num_scored,
                "passed": self.num_passed,
                "failed": self.num_scored - self.num_passed,
                "pass_rate": self.pass_rate,
            },
        }

    def to_row(self, *, repeat: int | None = None) -> dict[str, Any]:
        """A flat record for Arrow, pandas or a database: scalars and lists of one type only.

        The per-verifier detail is in ``verifier_names``/``verifier_passed`` (in
        definition order, counted verifiers only) and ``results_json`` (the
        ``results`` of :meth:`to_dict` as JSON text). :meth:`to_dict` stays the
        verdict JSONL record.
        """
        counted = [r for r in self.results if r.counted]
        return {
            "task_id": self.task_id,
            "domain": self.domain,
            "mode": self.mode or MISSING_MODE,
            "repeat": repeat,
            "policy": self.policy,
            "success": self.success,
            "reward": float(self.reward),
            "pass_rate": float(self.pass_rate),
            "num_defined": self.num_defined,
            "num_scored": self.num_scored,
            "num_passed": self.num_passed,
            "evaluation_completed": self.evaluation_completed,
            "failure_kind": self.failure_kind,
            "verifier_names": [r.name for r in counted],
            "verifier_passed": [bool(r.passed) for r in counted],
            "results_json": json.dumps([r.to_dict() for r in self.results], default=str),
        }
