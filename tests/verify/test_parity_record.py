"""Upstream's run record in parity, and what strict makes of the same cases.

Each case here was checked against the unmodified upstream harness (the
whole-task golden file replays many more: tests/verify/test_golden_tasks.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from eog_core import PARITY, STRICT, SqlOutcome, Task, load_task, verify_task
from eog_core.gym import GymClient, HttpSqlRunner
from eog_core.tasks import to_upstream
from eog_core.verify import JudgeRequest
from tests.verify.sql_gym import serve_sql_answers

GYM = "gym-a"


class Answers:
    """A SQL runner answering each query from a table (like a gym would)."""

    def __init__(self, answers: Mapping[str, Any]) -> None:
        self.answers = dict(answers)

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        return SqlOutcome.ok({"data": [{"v": self.answers[query]}]})


def task_with(*verifiers: Mapping[str, Any]) -> Task:
    return load_task(
        {
            "user_prompt": "p",
            "gym_servers_config": [
                {"mcp_server_name": GYM, "mcp_server_url": "http://localhost:1"}
            ],
            "verifiers": [dict(v) for v in verifiers],
        }
    )


def db(name: str | None, query: str, expected: Any = 1, gym: str | None = GYM) -> dict[str, Any]:
    verifier: dict[str, Any] = {
        "verifier_type": "database_state",
        "gym_name": gym,
        "validation_config": {"query": query, "expected_value": expected},
    }
    if name is not None:
        verifier["name"] = name
    return verifier


async def test_repeated_name_keeps_first_position_and_last_value() -> None:
    task = task_with(db("A", "SELECT 1"), db("B", "SELECT 2"), db("A", "SELECT 3"))
    verdict = await verify_task(
        task, sql=Answers({"SELECT 1": 1, "SELECT 2": 1, "SELECT 3": 0}), policy=PARITY
    )
    record = verdict.to_dict()
    assert list(record) == ["verification_results", "verification_summary", "overall_success"]
    assert list(record["verification_results"]) == ["A", "B"]
    assert record["verification_results"]["A"]["query"] == "SELECT 3"
    assert record["verification_summary"] == {
        "total": 2,
        "passed": 1,
        "failed": 1,
        "pass_rate": 0.5,
    }
    assert record["overall_success"] is False
    strict = await verify_task(
        task, sql=Answers({"SELECT 1": 1, "SELECT 2": 1, "SELECT 3": 0}), policy=STRICT
    )
    assert list(strict.verification_results()) == ["A", "B", "A#2"]


@pytest.mark.parametrize(
    "verifiers", [(), (db("x", "SELECT 1", gym="not-a-gym"),)], ids=["empty", "all-skipped"]
)
async def test_nothing_counted_is_upstreams_division_by_zero(
    verifiers: tuple[dict[str, Any], ...],
) -> None:
    task = task_with(*verifiers)
    parity = await verify_task(task, sql=Answers({"SELECT 1": 1}), policy=PARITY)
    assert parity.to_dict() == {"error": "division by zero", "overall_success": False}
    assert (parity.success, parity.evaluation_completed, parity.failure_kind) == (
        False,
        False,
        "run_error",
    )
    strict = await verify_task(task, sql=Answers({"SELECT 1": 1}), policy=STRICT)
    assert strict.failure_kind in ("no_verifiers", "config_error") and strict.run_error is None


async def test_verifier_without_validation_config_is_a_run_error() -> None:
    raw = {"verifier_type": "database_state", "name": "bare"}
    task = task_with(db("A", "SELECT 1"), raw)
    assert to_upstream(task)["verifiers"][1] == raw  # no validation_config invented
    parity = await verify_task(task, sql=Answers({"SELECT 1": 1}), policy=PARITY)
    assert parity.to_dict() == {
        "error": "VerifierConfig.__init__() missing 1 required positional argument: 'validation_config'",
        "overall_success": False,
    }
    strict = await verify_task(task, sql=Answers({"SELECT 1": 1}), policy=STRICT)
    assert (strict.failure_kind, strict.results[1].error) == (
        "config_error",
        "the verifier has no validation_config",
    )


def judged(minimum: Any = 7, **extra: Any) -> Task:
    config: dict[str, Any] = {"sql_query": "SELECT 1", "comparison_prompt": "same?", **extra}
    if minimum is not ...:
        config["minimum_comparison_value"] = minimum
    return task_with(
        {
            "verifier_type": "response_check",
            "name": "r",
            "gym_name": GYM,
            "validation_config": config,
        }
    )


def replying(reply: Any) -> Any:
    async def judge(request: JudgeRequest) -> str:
        if isinstance(reply, BaseException):
            raise reply
        return reply  # type: ignore[no-any-return]

    return judge


async def judge_result(task: Task, reply: Any, policy: Any = PARITY) -> dict[str, Any]:
    verdict = await verify_task(
        task,
        sql=Answers({"SELECT 1": 5}),
        policy=policy,
        judge=replying(reply),
        final_response="five",
    )
    return dict(verdict.results[0].upstream) | {"failure_kind": verdict.failure_kind}


async def test_judge_result_keeps_json_types() -> None:
    result = await judge_result(judged(7), '{"score": 8, "reasoning": null}')
    assert json.dumps(result) == json.dumps(
        {
            "passed": True,
            "score": 8,
            "minimum_score": 7,
            "reasoning": None,
            "sql_result": json.dumps({"data": [{"v": 5}]}, indent=2),
            "llm_response": "five",
            "failure_kind": None,
        }
    )
    assert (
        to_upstream(task_with(*to_upstream(judged(7))["verifiers"]))["verifiers"][0][
            "validation_config"
        ]["minimum_comparison_value"]
        == 7
    )
    assert (await judge_result(judged(...), '{"score": 7}'))[
        "minimum_score"
    ] == 7  # upstream's default


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("not json", "Judge comparison failed: Expecting value: line 1 column 1 (char 0)"),
        ("[8]", "Judge comparison failed: 'list' object has no attribute 'get'"),
        ("8", "Judge comparison failed: 'int' object has no attribute 'get'"),
        (
            '\u00a0{"score": 9}',
            "Judge comparison failed: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            '{"score": "9"}',
            "Judge comparison failed: '>=' not supported between instances of 'str' and 'int'",
        ),
        (RuntimeError("model overloaded"), "Judge comparison failed: model overloaded"),
    ],
)
async def test_judge_failures_fail_the_verifier_with_upstreams_text(reply: Any, error: str) -> None:
    result = await judge_result(judged(7), reply)
    assert {k: result[k] for k in ("passed", "error")} == {"passed": False, "error": error}
    if not str(reply).startswith("\u00a0"):  # strict strips every kind of whitespace
        strict = await judge_result(judged(7), reply, STRICT)
        assert strict["passed"] is False and strict["failure_kind"] == "judge_error"


async def test_fenced_reply_is_stripped_even_of_non_breaking_spaces() -> None:
    result = await judge_result(
        judged(7), '```json\n\u00a0{"score": 9, "reasoning": "ok"}\u00a0\n```'
    )
    assert (result["passed"], result["score"], result["reasoning"]) == (True, 9, "ok")
    strict = await judge_result(
        judged(7), '\u00a0{"score": 9}', STRICT
    )  # strict strips any whitespace
    assert strict["passed"] is True


@pytest.fixture
async def odd_gym() -> AsyncIterator[tuple[str, dict[str, tuple[int, bytes]]]]:
    """A real loopback gym whose sql-runner answers whatever the test sets."""
    answers: dict[str, tuple[int, bytes]] = {}

    async with serve_sql_answers(answers) as url:
        yield url, answers


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (
            400,
            b'{"detail": {"msg": "", "code": 1}}',
            "SQL API call failed (HTTP 400): {'msg': '', 'code': 1}",
        ),
        (400, b'{"detail": null}', "SQL API call failed (HTTP 400): None"),
        (400, b'{"message": " padded "}', "SQL API call failed (HTTP 400):  padded "),
        (400, b'["a"]', 'SQL API call failed (HTTP 400): ["a"]'),
        (200, b"", "Expecting value: line 1 column 1 (char 0)"),
        (200, b"   ", "Expecting value: line 1 column 4 (char 3)"),
        (200, b"<html>", "Expecting value: line 1 column 1 (char 0)"),
    ],
)
async def test_sql_runner_answers_read_as_upstream_reads_them(
    odd_gym: tuple[str, dict[str, tuple[int, bytes]]], status: int, body: bytes, error: str
) -> None:
    url, answers = odd_gym
    answers["SELECT 1"] = (status, body)
    async with GymClient(url, name=GYM) as client:
        runner = HttpSqlRunner({GYM: client})
        task = task_with(db("A", "SELECT 1"))
        parity = await verify_task(task, sql=runner, policy=PARITY, database_ids={GYM: "db1"})
        strict = await verify_task(task, sql=runner, policy=STRICT, database_ids={GYM: "db1"})
    assert parity.to_dict()["verification_results"]["A"] == {
        "passed": False,
        "error": f"SQL query failed: {error}",
        "query": "SELECT 1",
    }
    assert (strict.evaluation_completed, strict.failure_kind) == (False, "verifier_error")
