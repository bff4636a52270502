"""From verifier results to a task's verdict, under a policy (upstream's name collapse,
run errors and pass rate in parity; failure kinds in strict)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from eog_core.tasks import Task
from eog_core.verify._policy import Policy
from eog_core.verify._verdict import FailureKind, TaskVerdict, ToolLatency, VerifierResult

__all__ = ["MISSING_CONFIG_ERROR", "NOTHING_COUNTED_ERROR", "aggregate"]

#: Upstream's run error for a verifier without ``validation_config`` (its dataclass refuses it).
MISSING_CONFIG_ERROR = (
    "VerifierConfig.__init__() missing 1 required positional argument: 'validation_config'"
)
#: Upstream's run error when no verifier result was recorded (its log line divides by zero).
NOTHING_COUNTED_ERROR = "division by zero"
_FAILURE_PRIORITY: tuple[FailureKind, ...] = (
    "config_error",
    "gym_unreachable",
    "verifier_error",
    "judge_error",
)


def _run_error(task: Task, policy: Policy, counted: Sequence[VerifierResult]) -> str | None:
    """The error upstream's run records instead of results (parity only), or None."""
    if not policy.records_run_errors:
        return None
    if any(not verifier.has_validation_config for verifier in task.verifiers):
        return MISSING_CONFIG_ERROR
    return None if counted else NOTHING_COUNTED_ERROR


def aggregate(
    task: Task,
    policy: Policy,
    results: Sequence[VerifierResult],
    tool_latencies_ms: tuple[ToolLatency, ...] = (),
) -> TaskVerdict:
    counted = [r for r in results if r.counted]
    if policy.collapses_names:
        last = {r.name: r.index for r in counted}
        if len(last) < len(counted):  # a name repeats: the last of them counts
            results = [
                attrs.evolve(r, counted=False, overwritten=True)
                if r.counted and last[r.name] != r.index
                else r
                for r in results
            ]
            counted = [r for r in results if r.counted]
    num_passed = sum([r.passed for r in counted])
    pass_rate = num_passed / len(counted) if counted else 0.0
    failure_kind: FailureKind | None = None
    if policy.reports_failure_kinds:
        kinds = {r.failure_kind for r in counted}
        kinds.discard(None)
        if kinds:
            failure_kind = next((k for k in _FAILURE_PRIORITY if k in kinds), None)
        if failure_kind is None and not counted:
            failure_kind = "no_verifiers"
    run_error = _run_error(task, policy, counted)
    if run_error is not None:
        failure_kind, pass_rate = "run_error", 0.0
    success = num_passed == len(counted) and bool(counted) and failure_kind is None
    reward = pass_rate if policy.reward == "fractional" else float(success)
    return TaskVerdict(
        policy=policy.name,
        task_id=task.task_id,
        domain=task.domain,
        mode=task.mode,
        success=success,
        reward=reward,
        pass_rate=pass_rate,
        num_defined=len(task.verifiers),
        num_scored=len(counted),
        num_passed=num_passed,
        results=tuple(results),
        evaluation_completed=failure_kind is None,
        failure_kind=failure_kind,
        run_error=run_error,
        tool_latencies_ms=tool_latencies_ms,
    )
