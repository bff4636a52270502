"""The verifier engine: run a task's verifiers against final database state.

``score_database_state`` is the pure heart (one validation config + one SQL
outcome -> upstream's result dict); ``verify_task`` runs every verifier of a
task concurrently through a :class:`SqlRunner` and aggregates a
:class:`TaskVerdict` under a policy.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from eog_core.errors import EogError, UsageError
from eog_core.tasks import (
    DatabaseStateCheck,
    DatabaseStateVerifier,
    GymServer,
    ResponseCheckVerifier,
    Task,
    ToolExecutionVerifier,
    Verifier,
)
from eog_core.verify._compare import Comparison
from eog_core.verify._extract import extract_value
from eog_core.verify._judge import DEFAULT_JUDGE_PROMPT, Judge, JudgePrompt
from eog_core.verify._outcome import SqlOutcome, SqlRunner
from eog_core.verify._policy import STRICT, Policy
from eog_core.verify._response import judge_decision

__all__ = [
    "FailureKind", "TaskVerdict", "ToolLatency", "VerifierResult", "score_database_state", "verify_task",
]

FailureKind = Literal["config_error", "verifier_error", "gym_unreachable", "judge_error", "no_verifiers",
                      "run_error"]
#: Upstream's run error for a verifier without ``validation_config`` (its dataclass refuses it).
MISSING_CONFIG_ERROR = "VerifierConfig.__init__() missing 1 required positional argument: 'validation_config'"
#: Upstream's run error when no verifier result was recorded (its log line divides by zero).
NOTHING_COUNTED_ERROR = "division by zero"
_FAILURE_PRIORITY: tuple[FailureKind, ...] = (
    "config_error", "gym_unreachable", "verifier_error", "judge_error")


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
            "index": self.index, "name": self.name, "kind": self.kind, "gym": self.gym,
            "passed": self.passed, "counted": self.counted, "expected": self.expected,
            "actual": self.actual, "comparison_type": self.comparison_type,
            "details": self.details, "error": self.error, "query": self.query,
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
            "verification_summary": {"total": total, "passed": passed, "failed": total - passed,
                                     "pass_rate": passed / total if total > 0 else 0.0},
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
        head: dict[str, Any] = {"task_id": self.task_id, "domain": self.domain, "mode": self.mode}
        if repeat is not None:
            head["repeat"] = repeat
        latencies = (
            {"tool_latencies_ms": [t.to_dict() for t in self.tool_latencies_ms]}
            if self.tool_latencies_ms else {}
        )
        body = head | {
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
        } | latencies
        if self.policy == "parity":
            return body | self.upstream_record()
        return body | {
            "verification_results": self.verification_results(),
            "verification_summary": {
                "total": self.num_scored, "passed": self.num_passed,
                "failed": self.num_scored - self.num_passed, "pass_rate": self.pass_rate,
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
            "task_id": self.task_id, "domain": self.domain, "mode": self.mode, "repeat": repeat,
            "policy": self.policy, "success": self.success, "reward": float(self.reward),
            "pass_rate": float(self.pass_rate), "num_defined": self.num_defined,
            "num_scored": self.num_scored, "num_passed": self.num_passed,
            "evaluation_completed": self.evaluation_completed, "failure_kind": self.failure_kind,
            "verifier_names": [r.name for r in counted],
            "verifier_passed": [bool(r.passed) for r in counted],
            "results_json": json.dumps([r.to_dict() for r in self.results], default=str),
        }


def _score(query: str, expected: Any, comparison_type: Any, outcome: SqlOutcome | Mapping[str, Any],
           policy: Policy) -> tuple[dict[str, Any], Comparison | None]:
    succeeded = outcome.success if isinstance(outcome, SqlOutcome) else outcome.get("success")
    if not succeeded:
        error = outcome.error if isinstance(outcome, SqlOutcome) else outcome.get("error")
        return {"passed": False, "error": f"SQL query failed: {error}", "query": query}, None
    actual = extract_value(outcome, policy)
    comparison = policy.compare(actual, expected, comparison_type)
    return {
        "passed": comparison.passed, "expected": expected, "actual": actual,
        "comparison_type": comparison_type, "query": query, "details": comparison.details,
    }, comparison


def score_database_state(validation_config: Mapping[str, Any] | DatabaseStateCheck,
                         outcome: SqlOutcome | Mapping[str, Any], policy: Policy = STRICT) -> dict[str, Any]:
    """One ``database_state`` verifier's result dict, given its SQL outcome (pure, sync)."""
    if isinstance(validation_config, DatabaseStateCheck):
        query, expected, comparison_type = (
            validation_config.query, validation_config.expected_value, validation_config.comparison_type)
    else:
        query = validation_config.get("query")
        expected = validation_config.get("expected_value")
        comparison_type = validation_config.get("comparison_type", "equals")
    if not query:
        return {"passed": False, "error": "No SQL query provided"}
    return _score(query, expected, comparison_type, outcome, policy)[0]


def _outcome_failure(outcome: SqlOutcome) -> FailureKind:
    if outcome.error_kind == "config":
        return "config_error"
    return "gym_unreachable" if outcome.error_kind == "transport" else "verifier_error"


def _tool_names(tool_calls: Iterable[Any]) -> list[str]:
    names = []
    for call in tool_calls:
        if isinstance(call, str):
            names.append(call)
        elif isinstance(call, Mapping):
            names.append(str(call.get("name") or call.get("tool_name")))
        else:
            names.append(str(call.name))
    return names


@attrs.frozen(kw_only=True)
class _Run:
    """What one verify_task call shares among its verifiers."""

    task: Task
    sql: SqlRunner | None
    policy: Policy
    database_ids: Mapping[str, str]
    final_response: str
    tool_names: list[str]
    judge: Judge | None
    judge_prompt: JudgePrompt
    semaphore: asyncio.Semaphore

    def target(self, verifier: Verifier) -> tuple[GymServer | None, str | None, dict[str, Any]]:
        """The gym, database id and context a verifier's query runs with."""
        if verifier.gym_name:
            gym = self.task.gym(verifier.gym_name)
            context = dict(gym.context) if gym else {}
            return gym, self.database_ids.get(verifier.gym_name), context
        gym = self.task.default_gym
        legacy_context = self.task.legacy.get("context")
        context = dict(gym.context) if gym else {}
        if isinstance(legacy_context, Mapping):
            context.update(legacy_context)
        database_id = self.task.legacy.get("database_id") or (
            self.database_ids.get(gym.name) if gym else None)
        return gym, database_id, context

    async def run_query(self, verifier: Verifier, query: str) -> SqlOutcome:
        gym, database_id, context = self.target(verifier)
        if self.sql is None:
            return SqlOutcome.failed("no SQL runner was given to verify_task", kind="transport")
        if gym is None:
            return SqlOutcome.failed("the task has no gym to run the query on", kind="database")
        async with self.semaphore:
            try:
                return await self.sql.run_sql(gym.name, database_id, query, context)
            except EogError as exc:  # a runner that raises instead of answering: unreachable
                return SqlOutcome.failed(str(exc), kind="transport")


async def _database_state(run: _Run, verifier: DatabaseStateVerifier) -> tuple[dict[str, Any], FailureKind | None]:
    config = verifier.validation_config
    if not config.query:
        return {"passed": False, "error": "No SQL query provided"}, "config_error"
    refusal = run.policy.refuse_query(config.query)
    if refusal:
        return {"passed": False, "error": f"Verifier query refused: {refusal}",
                "query": config.query}, "config_error"
    outcome = await run.run_query(verifier, config.query)
    result, comparison = _score(config.query, config.expected_value, config.comparison_type,
                                outcome, run.policy)
    if comparison is None:
        return result, _outcome_failure(outcome)
    return result, None if comparison.known_type else "config_error"


async def _response_check(run: _Run, verifier: ResponseCheckVerifier) -> tuple[dict[str, Any], FailureKind | None]:
    config = verifier.validation_config
    if not config.sql_query or not config.comparison_prompt:
        return {"passed": False, "error": "Missing sql_query or comparison_prompt"}, "config_error"
    if run.judge is None:
        return {"passed": False, "error": "No judge configured for response_check verifiers"}, "config_error"
    refusal = run.policy.refuse_query(config.sql_query)
    if refusal:
        return {"passed": False, "error": f"Verifier query refused: {refusal}"}, "config_error"
    outcome = await run.run_query(verifier, config.sql_query)
    if not outcome.success:
        return {"passed": False, "error": f"SQL query failed: {outcome.error}"}, _outcome_failure(outcome)
    sql_result = json.dumps(outcome.body, indent=2)
    minimum = config.minimum_comparison_value
    request = run.judge_prompt.render(
        sql_result=sql_result, final_response=run.final_response,
        comparison_prompt=config.comparison_prompt, minimum_score=minimum)  # type: ignore[arg-type]
    try:
        reply = await run.judge(request)
        score, reasoning, passed = judge_decision(reply, minimum, upstream=run.policy.name == "parity")
    except Exception as exc:  # a failing judge fails its verifier, never the run
        return {"passed": False, "error": f"Judge comparison failed: {exc}"}, "judge_error"
    return {"passed": passed, "score": score, "minimum_score": minimum,
            "reasoning": reasoning, "sql_result": sql_result,
            "llm_response": run.final_response}, None


def _tool_execution(run: _Run, verifier: ToolExecutionVerifier) -> dict[str, Any]:
    config = verifier.validation_config
    missing = [tool for tool in config.selected_tools if tool not in run.tool_names]
    passed = not missing and len(run.tool_names) >= config.minimum_tool_calls
    return {"passed": passed, "selected_tools": list(config.selected_tools),
            "tools_called": list(run.tool_names), "missing_tools": missing,
            "minimum_tool_calls": config.minimum_tool_calls, "actual_tool_calls": len(run.tool_names)}


async def _run_one(run: _Run, index: int, verifier: Verifier) -> VerifierResult:
    name = verifier.name or f"verifier_{index + 1}"
    base: dict[str, Any] = {"index": index, "name": name, "kind": verifier.verifier_type,
                            "gym": verifier.gym_name}
    if not verifier.has_validation_config:
        error = "the verifier has no validation_config"
        if run.policy.records_run_errors:  # upstream's run fails here: see _aggregate
            return VerifierResult(**base, passed=False, counted=False, error=MISSING_CONFIG_ERROR)
        return VerifierResult(**base, passed=False, error=error, failure_kind="config_error",
                              upstream={"passed": False, "error": error})
    if verifier.gym_name and run.task.gym(verifier.gym_name) is None:
        error = f"Gym '{verifier.gym_name}' is not a gym of this task"
        if run.policy.skips_unknown_gyms:
            return VerifierResult(**base, passed=False, counted=False, error=f"{error} (skipped, as upstream does)")
        return VerifierResult(**base, passed=False, error=error, failure_kind="config_error",
                              upstream={"passed": False, "error": error})
    failure: FailureKind | None = None
    if isinstance(verifier, DatabaseStateVerifier):
        result, failure = await _database_state(run, verifier)
    elif isinstance(verifier, ResponseCheckVerifier):
        result, failure = await _response_check(run, verifier)
    elif isinstance(verifier, ToolExecutionVerifier):
        result = _tool_execution(run, verifier)
    else:
        result, failure = {"passed": False,
                           "error": f"Unsupported verifier type: {verifier.verifier_type}"}, "config_error"
    return VerifierResult(
        **base, passed=bool(result.get("passed")), expected=result.get("expected"),
        actual=result.get("actual"), comparison_type=result.get("comparison_type"),
        details=result.get("details"), error=result.get("error"), query=result.get("query"),
        failure_kind=failure if run.policy.reports_failure_kinds else None, upstream=result)


def _run_error(task: Task, policy: Policy, counted: Sequence[VerifierResult]) -> str | None:
    """The error upstream's run records instead of results (parity only), or None."""
    if not policy.records_run_errors:
        return None
    if any(not verifier.has_validation_config for verifier in task.verifiers):
        return MISSING_CONFIG_ERROR
    return None if counted else NOTHING_COUNTED_ERROR


def _aggregate(task: Task, policy: Policy, results: Sequence[VerifierResult]) -> TaskVerdict:
    if policy.collapses_names:
        last = {r.name: r.index for r in results if r.counted}
        results = [attrs.evolve(r, counted=False, overwritten=True)
                   if r.counted and last[r.name] != r.index else r for r in results]
    counted = [r for r in results if r.counted]
    num_passed = sum(r.passed for r in counted)
    pass_rate = num_passed / len(counted) if counted else 0.0
    failure_kind: FailureKind | None = None
    if policy.reports_failure_kinds:
        kinds = {r.failure_kind for r in counted}
        failure_kind = next((k for k in _FAILURE_PRIORITY if k in kinds), None)
        if failure_kind is None and not counted:
            failure_kind = "no_verifiers"
    run_error = _run_error(task, policy, counted)
    if run_error is not None:
        failure_kind, pass_rate = "run_error", 0.0
    success = num_passed == len(counted) and bool(counted) and failure_kind is None
    reward = pass_rate if policy.reward == "fractional" else float(success)
    return TaskVerdict(
        policy=policy.name, task_id=task.task_id, domain=task.domain, mode=task.mode,
        success=success, reward=reward,
        pass_rate=pass_rate, num_defined=len(task.verifiers), num_scored=len(counted),
        num_passed=num_passed, results=tuple(results),
        evaluation_completed=failure_kind is None, failure_kind=failure_kind, run_error=run_error)


async def verify_task(
    task: Task,
    *,
    sql: SqlRunner | None,
    policy: Policy = STRICT,
    database_ids: Mapping[str, str] | None = None,
    final_response: str | None = None,
    tool_calls: Iterable[Any] = (),
    judge: Judge | None = None,
    judge_prompt: JudgePrompt = DEFAULT_JUDGE_PROMPT,
    max_concurrency: int = 8,
) -> TaskVerdict:
    """Run every verifier of ``task`` and aggregate the verdict under ``policy``.

    ``sql`` answers the verifier queries (``SqliteSqlRunner`` offline, the HTTP
    runner live); ``database_ids`` maps gym names to the rollout's database ids.
    Verifiers run concurrently (at most ``max_concurrency`` queries at once);
    results keep definition order. ``tool_calls`` are names, mappings with a
    ``name``, or objects with a ``name`` attribute (for ``tool_execution``).
    """
    if max_concurrency < 1:
        raise UsageError(f"max_concurrency must be at least 1, got {max_concurrency}")
    run = _Run(task=task, sql=sql, policy=policy, database_ids=dict(database_ids or {}),
               final_response=final_response or "", tool_names=_tool_names(tool_calls),
               judge=judge, judge_prompt=judge_prompt, semaphore=asyncio.Semaphore(max_concurrency))
    results = await asyncio.gather(*(_run_one(run, i, v) for i, v in enumerate(task.verifiers)))
    return _aggregate(task, policy, results)
