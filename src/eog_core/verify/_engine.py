"""The verifier engine: run a task's verifiers against final database state.

``score_database_state`` is the pure heart (one validation config + one SQL
outcome -> upstream's result dict); ``verify_task`` runs every verifier of a
task concurrently through a :class:`SqlRunner` and aggregates a
:class:`TaskVerdict` under a policy. What a call shares is ``_run.py``; awaiting the
queries is ``_settle.py``; the verdict is made in ``_aggregate.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

from eog_core.errors import UsageError
from eog_core.tasks import (
    DatabaseStateCheck,
    DatabaseStateVerifier,
    GymServer,
    ResponseCheckVerifier,
    Task,
    ToolExecutionVerifier,
    Verifier,
)
from eog_core.verify._aggregate import MISSING_CONFIG_ERROR, aggregate
from eog_core.verify._compare import Comparison
from eog_core.verify._extract import extract_value
from eog_core.verify._judge import DEFAULT_JUDGE_PROMPT, Judge, JudgePrompt
from eog_core.verify._outcome import SqlOutcome, SqlRunner
from eog_core.verify._policy import STRICT, Policy
from eog_core.verify._response import judge_decision
from eog_core.verify._run import Run, tool_names
from eog_core.verify._settle import Pending, close_unstarted, settle
from eog_core.verify._verdict import FailureKind, TaskVerdict, ToolLatency, VerifierResult

__all__ = ["score_database_state", "verify_task"]


def _score(
    query: str | None,
    expected: Any,
    comparison_type: Any,
    outcome: SqlOutcome | Mapping[str, Any],
    policy: Policy,
) -> tuple[dict[str, Any], Comparison | None]:
    succeeded = outcome.success if isinstance(outcome, SqlOutcome) else outcome.get("success")
    if not succeeded:
        error = outcome.error if isinstance(outcome, SqlOutcome) else outcome.get("error")
        return {"passed": False, "error": f"SQL query failed: {error}", "query": query}, None
    actual = extract_value(outcome, policy)
    comparison = policy.compare(actual, expected, comparison_type)
    return {
        "passed": comparison.passed,
        "expected": expected,
        "actual": actual,
        "comparison_type": comparison_type,
        "query": query,
        "details": comparison.details,
    }, comparison


def score_database_state(
    validation_config: Mapping[str, Any] | DatabaseStateCheck,
    outcome: SqlOutcome | Mapping[str, Any],
    policy: Policy = STRICT,
) -> dict[str, Any]:
    """One ``database_state`` verifier's result dict, given its SQL outcome (pure, sync)."""
    if isinstance(validation_config, DatabaseStateCheck):
        query, expected, comparison_type = (
            validation_config.query,
            validation_config.expected_value,
            validation_config.comparison_type,
        )
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


def _scored(
    run: Run, index: int, verifier: DatabaseStateVerifier, outcome: SqlOutcome
) -> VerifierResult:
    """A database_state verifier's result, given its SQL outcome."""
    config = verifier.validation_config
    if problem := run.truncated(config.query, outcome):
        result = {"passed": False, "error": problem, "details": problem, "query": config.query}
        return _result(run, index, verifier, result, "verifier_error")
    result, comparison = _score(
        config.query, config.expected_value, config.comparison_type, outcome, run.policy
    )
    if comparison is None:
        return _result(run, index, verifier, result, _outcome_failure(outcome))
    return VerifierResult(
        index=index,
        name=verifier.name or f"verifier_{index + 1}",
        kind=verifier.verifier_type,
        gym=verifier.gym_name,
        passed=bool(comparison.passed),
        expected=config.expected_value,
        actual=result["actual"],
        comparison_type=config.comparison_type,
        details=comparison.details,
        query=config.query,
        upstream=result,
        failure_kind=None
        if comparison.known_type or not run.reports_failure_kinds
        else "config_error",
    )


async def _response_check(
    run: Run, verifier: ResponseCheckVerifier, gym: GymServer | None, query: str
) -> tuple[dict[str, Any], FailureKind | None]:
    config = verifier.validation_config
    outcome = await run.run_query(verifier, gym, query)
    if not outcome.success:
        return {"passed": False, "error": f"SQL query failed: {outcome.error}"}, _outcome_failure(
            outcome
        )
    if problem := run.truncated(query, outcome):
        return {"passed": False, "error": problem, "details": problem}, "verifier_error"
    sql_result = json.dumps(outcome.body, indent=2)
    minimum = config.minimum_comparison_value
    request = run.judge_prompt.render(
        sql_result=sql_result,
        final_response=run.final_response,
        comparison_prompt=config.comparison_prompt,  # type: ignore[arg-type]
        minimum_score=minimum,  # type: ignore[arg-type]
    )
    try:
        reply = await run.judge(request)  # type: ignore[misc]  # checked by _prepare
        score, reasoning, passed = judge_decision(
            reply, minimum, upstream=run.policy.name == "parity"
        )
    except Exception as exc:  # a failing judge fails its verifier, never the run
        return {"passed": False, "error": f"Judge comparison failed: {exc}"}, "judge_error"
    return {
        "passed": passed,
        "score": score,
        "minimum_score": minimum,
        "reasoning": reasoning,
        "sql_result": sql_result,
        "llm_response": run.final_response,
    }, None


def _tool_execution(run: Run, verifier: ToolExecutionVerifier) -> dict[str, Any]:
    config = verifier.validation_config
    missing = [tool for tool in config.selected_tools if tool not in run.tool_names]
    passed = not missing and len(run.tool_names) >= config.minimum_tool_calls
    return {
        "passed": passed,
        "selected_tools": list(config.selected_tools),
        "tools_called": list(run.tool_names),
        "missing_tools": missing,
        "minimum_tool_calls": config.minimum_tool_calls,
        "actual_tool_calls": len(run.tool_names),
    }


def _result(
    run: Run, index: int, verifier: Verifier, result: dict[str, Any], failure: FailureKind | None
) -> VerifierResult:
    get = result.get
    return VerifierResult(
        index=index,
        name=verifier.name or f"verifier_{index + 1}",
        kind=verifier.verifier_type,
        gym=verifier.gym_name,
        passed=bool(get("passed")),
        expected=get("expected"),
        actual=get("actual"),
        comparison_type=get("comparison_type"),
        details=get("details"),
        error=get("error"),
        query=get("query"),
        failure_kind=failure if run.reports_failure_kinds else None,
        upstream=result,
    )


def _unscored(
    index: int, verifier: Verifier, error: str, *, counted: bool = True
) -> VerifierResult:
    """A verifier that could not be scored: a configuration error, or (``counted=False``) skipped."""
    name = verifier.name or f"verifier_{index + 1}"
    if not counted:
        return VerifierResult(
            index=index,
            name=name,
            kind=verifier.verifier_type,
            gym=verifier.gym_name,
            passed=False,
            counted=False,
            error=error,
        )
    return VerifierResult(
        index=index,
        name=name,
        kind=verifier.verifier_type,
        gym=verifier.gym_name,
        passed=False,
        error=error,
        failure_kind="config_error",
        upstream={"passed": False, "error": error},
    )


def _prepare(run: Run, index: int, verifier: Verifier) -> VerifierResult | Pending:
    """A verifier's result when it needs nothing awaited, else what it waits for."""
    gym_name = verifier.gym_name
    gym = run.task.gym(gym_name) if gym_name else None
    if not verifier.has_validation_config:
        if run.policy.records_run_errors:  # upstream's run fails here: see _aggregate
            return _unscored(index, verifier, MISSING_CONFIG_ERROR, counted=False)
        return _unscored(index, verifier, "the verifier has no validation_config")
    if gym_name and gym is None:
        error = f"Gym '{gym_name}' is not a gym of this task"
        if run.policy.skips_unknown_gyms:
            return _unscored(index, verifier, f"{error} (skipped, as upstream does)", counted=False)
        return _unscored(index, verifier, error)
    if isinstance(verifier, DatabaseStateVerifier):
        query = verifier.validation_config.query
        if not query:
            return _result(
                run,
                index,
                verifier,
                {"passed": False, "error": "No SQL query provided"},
                "config_error",
            )
        if refusal := run.policy.refuse_query(query):
            return _result(
                run,
                index,
                verifier,
                {"passed": False, "error": f"Verifier query refused: {refusal}", "query": query},
                "config_error",
            )
        answer = run.query(verifier, gym, query)
        if isinstance(answer, SqlOutcome):
            return _scored(run, index, verifier, answer)
        return index, verifier, answer
    if isinstance(verifier, ResponseCheckVerifier):
        config = verifier.validation_config
        if not config.sql_query or not config.comparison_prompt:
            return _result(
                run,
                index,
                verifier,
                {"passed": False, "error": "Missing sql_query or comparison_prompt"},
                "config_error",
            )
        if run.judge is None:
            return _result(
                run,
                index,
                verifier,
                {"passed": False, "error": "No judge configured for response_check verifiers"},
                "config_error",
            )
        query = config.sql_query
        if refusal := run.policy.refuse_query(query):
            return _result(
                run,
                index,
                verifier,
                {"passed": False, "error": f"Verifier query refused: {refusal}"},
                "config_error",
            )
        return index, verifier, _response_check(run, verifier, gym, query)
    if isinstance(verifier, ToolExecutionVerifier):
        return _result(run, index, verifier, _tool_execution(run, verifier), None)
    return _result(
        run,
        index,
        verifier,
        {"passed": False, "error": f"Unsupported verifier type: {verifier.verifier_type}"},
        "config_error",
    )


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
    tool_latencies_ms: Iterable[ToolLatency] = (),
) -> TaskVerdict:
    """Run every verifier of ``task`` and aggregate the verdict under ``policy``.

    ``sql`` answers the verifier queries (``SqliteSqlRunner`` offline, the HTTP
    runner live); ``database_ids`` maps gym names to the rollout's database ids.
    Verifiers run concurrently (at most ``max_concurrency`` queries at once);
    results keep definition order. ``tool_calls`` are names, mappings with a
    ``name``, or objects with a ``name`` attribute (for ``tool_execution``).
    ``tool_latencies_ms`` goes into the verdict as given (``TaskSession`` reports
    its calls' latencies there).
    """
    if max_concurrency < 1:
        raise UsageError(f"max_concurrency must be at least 1, got {max_concurrency}")
    run = Run(
        task,
        sql,
        policy,
        database_ids or {},
        final_response or "",
        tool_names(tool_calls),
        judge,
        judge_prompt,
    )
    verifiers = task.verifiers
    if len(verifiers) > max_concurrency:
        run.semaphore = asyncio.Semaphore(max_concurrency)
    results: list[Any] = []
    try:
        for index, verifier in enumerate(verifiers):
            results.append(_prepare(run, index, verifier))
    except BaseException:
        close_unstarted(item[2] for item in results if type(item) is tuple)
        raise
    pending: list[Pending] = [item for item in results if type(item) is tuple]
    if pending:
        for (index, verifier, _), answer in zip(pending, await settle(pending), strict=True):
            if isinstance(verifier, DatabaseStateVerifier):
                results[index] = _scored(run, index, verifier, answer)
            else:
                results[index] = _result(run, index, verifier, *answer)
    return aggregate(task, policy, results, tuple(tool_latencies_ms))
