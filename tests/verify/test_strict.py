"""Each strict rule, with a case where parity (upstream) and strict disagree."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from eog_core import (
    PARITY,
    STRICT,
    SqliteSqlRunner,
    SqlOutcome,
    Task,
    compare_values,
    load_task,
    verify_task,
)
from eog_core.errors import UsageError, VerificationError
from eog_core.tasks import task_from_mapping, to_upstream
from eog_core.verify import JudgeRequest, Policy


def make_db(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.executescript("""
            CREATE TABLE ticket (id INTEGER PRIMARY KEY, state TEXT, priority INTEGER, updated_at TEXT);
            INSERT INTO ticket VALUES (1, 'closed', 2, '2025-01-01T10:00:00Z'), (2, 'open', 5, NULL);
        """)
    return path


def task_with(*verifiers: Mapping[str, Any], gyms: tuple[str, ...] = ("gym-a",)) -> Task:
    return load_task(
        {
            "user_prompt": "close ticket 1",
            "gym_servers_config": [
                {"mcp_server_name": g, "mcp_server_url": f"http://localhost:{8100 + i}"}
                for i, g in enumerate(gyms)
            ],
            "verifiers": [dict(v) for v in verifiers],
        }
    )


def check(
    query: str,
    expected: Any,
    name: str = "check",
    gym: str | None = "gym-a",
    comparison: str = "equals",
) -> dict[str, Any]:
    return {
        "verifier_type": "database_state",
        "name": name,
        "gym_name": gym,
        "validation_config": {
            "query": query,
            "expected_value": expected,
            "comparison_type": comparison,
        },
    }


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[SqliteSqlRunner]:
    with SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}) as opened:
        yield opened


async def both(task: Task, runner: Any, **kwargs: Any) -> tuple[Any, Any]:
    return (
        await verify_task(task, sql=runner, policy=PARITY, **kwargs),
        await verify_task(task, sql=runner, policy=STRICT, **kwargs),
    )


async def test_every_verifier_counts(runner: SqliteSqlRunner) -> None:
    task = task_with(
        check("SELECT state FROM ticket WHERE id = 2", "closed", name="same"),
        check("SELECT state FROM ticket WHERE id = 1", "closed", name="same"),
    )
    parity, strict = await both(task, runner)
    assert (parity.success, parity.num_scored, parity.pass_rate) == (True, 1, 1.0)
    assert (strict.success, strict.num_scored, strict.pass_rate) == (False, 2, 0.5)
    assert [r.counted for r in parity.results] == [False, True]
    assert list(strict.to_dict()["verification_results"]) == ["same", "same#2"]


@pytest.mark.parametrize("expected", ["1", "1.0", " 1 "])
async def test_numbers_equal_their_numeric_strings(runner: SqliteSqlRunner, expected: str) -> None:
    task = task_with(check("SELECT COUNT(*) FROM ticket WHERE state = 'closed'", expected))
    parity, strict = await both(task, runner)
    assert parity.success is False
    assert strict.success is True


@pytest.mark.parametrize(
    ("actual", "expected", "kind"),
    [("10", 9, "greater_than"), (3, "4", "less_than"), (1, "1.0", "equals")],
)
def test_numeric_strings_in_ordering_comparisons(actual: Any, expected: Any, kind: str) -> None:
    assert compare_values(actual, expected, kind, STRICT).passed is True
    assert compare_values(actual, expected, kind, PARITY).passed is False


def test_non_numeric_strings_stay_strings() -> None:
    assert compare_values("1e3x", 1000, "equals", STRICT).passed is False
    assert compare_values("nan", float("nan"), "equals", STRICT).passed is False
    assert compare_values(True, 1, "equals", STRICT).passed is True  # SQLite booleans are integers


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("2025-01-01T10:00:00Z", "2025-01-01 10:00:00"),
        ("2025-01-01T12:00:00+02:00", "2025-01-01T10:00:00Z"),
    ],
)
def test_iso_timestamps_compare_as_instants(actual: str, expected: str) -> None:
    assert compare_values(actual, expected, "equals", STRICT).passed is True
    assert compare_values(actual, expected, "equals", PARITY).passed is False
    assert compare_values("2025-01-02", "2025-01-01 10:00:00", "equals", STRICT).passed is False


def test_later_instant_is_greater() -> None:
    assert compare_values(
        "2025-01-01T11:00:00+00:00", "2025-01-01 10:30:00", "greater_than", STRICT
    ).passed


async def test_unknown_gym_fails_in_strict_and_is_skipped_in_parity(
    runner: SqliteSqlRunner,
) -> None:
    task = task_with(
        check("SELECT state FROM ticket WHERE id = 1", "closed"),
        check("SELECT 1", 1, name="elsewhere", gym="gym-nowhere"),
    )
    parity, strict = await both(task, runner)
    assert (parity.success, parity.num_scored, parity.evaluation_completed) == (True, 1, True)
    assert (strict.success, strict.evaluation_completed, strict.failure_kind) == (
        False,
        False,
        "config_error",
    )
    assert "gym-nowhere" in (strict.results[1].error or "")


async def test_rejected_query_is_a_verifier_error(runner: SqliteSqlRunner) -> None:
    task = task_with(check("SELECT nope FROM ticket", 1))
    parity, strict = await both(task, runner)
    assert (
        parity.results[0].error
        == "SQL query failed: SQLite rejected the query: no such column: nope"
    )
    assert (parity.evaluation_completed, parity.failure_kind) == (True, None)
    assert (strict.success, strict.evaluation_completed, strict.failure_kind) == (
        False,
        False,
        "verifier_error",
    )


async def test_empty_verifier_set_is_not_a_success(runner: SqliteSqlRunner) -> None:
    parity, strict = await both(task_with(), runner)
    assert parity.to_dict() == {
        "error": "division by zero",
        "overall_success": False,
    }  # upstream's run error
    assert (parity.success, parity.reward, parity.failure_kind) == (False, 0.0, "run_error")
    assert (strict.success, strict.failure_kind, strict.reward) == (False, "no_verifiers", 0.0)


async def test_write_queries_are_refused_before_they_run(tmp_path: Path) -> None:
    connection = sqlite3.connect(make_db(tmp_path / "w.sqlite"))
    runner = SqliteSqlRunner({"gym-a": connection})
    task = task_with(check("UPDATE ticket SET state = 'gone' WHERE id = 1 RETURNING id", 1))
    strict = await verify_task(task, sql=runner, policy=STRICT)
    assert strict.failure_kind == "config_error"
    assert "read-only" in (strict.results[0].error or "")
    assert connection.execute("SELECT COUNT(*) FROM ticket WHERE state = 'gone'").fetchone() == (0,)
    parity = await verify_task(task, sql=runner, policy=PARITY)  # our runner is read-only anyway
    assert "read-only" in (parity.results[0].error or "")
    assert connection.execute("SELECT COUNT(*) FROM ticket WHERE state = 'gone'").fetchone() == (0,)
    writable = SqliteSqlRunner({"gym-a": connection}, read_only=False)
    parity = await verify_task(
        task, sql=writable, policy=PARITY
    )  # upstream runs whatever it is given
    assert parity.results[0].passed is True
    assert connection.execute("SELECT COUNT(*) FROM ticket WHERE state = 'gone'").fetchone() == (1,)


async def test_multi_statement_query_is_refused(runner: SqliteSqlRunner) -> None:
    strict = await verify_task(task_with(check("SELECT 1; SELECT 2", 1)), sql=runner, policy=STRICT)
    assert "2 statements" in (strict.results[0].error or "")


async def test_unknown_comparison_type_is_a_config_error(runner: SqliteSqlRunner) -> None:
    task = task_with(check("SELECT 1", 1, comparison="not_equals"))
    parity, strict = await both(task, runner)
    assert parity.results[0].details == "Unknown comparison type: not_equals"
    assert parity.failure_kind is None and strict.failure_kind == "config_error"


async def test_fractional_reward_is_the_pass_rate(runner: SqliteSqlRunner) -> None:
    task = task_with(
        check("SELECT state FROM ticket WHERE id = 1", "closed", name="a"),
        check("SELECT state FROM ticket WHERE id = 2", "closed", name="b"),
    )
    binary = await verify_task(task, sql=runner, policy=STRICT)
    fractional = await verify_task(task, sql=runner, policy=STRICT.with_reward("fractional"))
    assert (binary.reward, fractional.reward) == (0.0, 0.5)


class Unreachable:
    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        return SqlOutcome.failed("Cannot connect to host localhost:8100", kind="transport")


async def test_unreachable_gym_is_reported_not_scored() -> None:
    parity, strict = await both(task_with(check("SELECT 1", 1)), Unreachable())
    assert parity.success is False and parity.evaluation_completed is True
    assert (strict.evaluation_completed, strict.failure_kind) == (False, "gym_unreachable")


async def test_missing_query_is_reported(runner: SqliteSqlRunner) -> None:
    task = task_with(
        {
            "verifier_type": "database_state",
            "gym_name": "gym-a",
            "validation_config": {"expected_value": 1},
        }
    )
    parity, strict = await both(task, runner)
    assert parity.results[0].upstream == {"passed": False, "error": "No SQL query provided"}
    assert parity.results[0].name == "verifier_1"
    assert strict.failure_kind == "config_error"


async def test_gymless_verifier_uses_the_first_gym(tmp_path: Path) -> None:
    runner = SqliteSqlRunner(
        {"gym-a": make_db(tmp_path / "a.sqlite"), "gym-b": tmp_path / "a.sqlite"}
    )
    task = task_with(
        check("SELECT state FROM ticket WHERE id = 1", "closed", gym=None), gyms=("gym-a", "gym-b")
    )
    verdict = await verify_task(task, sql=runner, policy=STRICT)
    assert verdict.success and verdict.results[0].gym is None


def test_missing_snapshot_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match="not found"):
        SqliteSqlRunner({"gym-a": tmp_path / "nope.sqlite"})
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all, really not" * 10)
    with pytest.raises(VerificationError, match="not a SQLite file"):
        SqliteSqlRunner({"gym-a": tmp_path / "junk.sqlite"})


async def test_snapshot_files_are_read_only(tmp_path: Path) -> None:
    runner = SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")})
    outcome = await runner.run_sql("gym-a", None, "DELETE FROM ticket", {})
    assert not outcome.success and "read-only here (refused DELETE)" in (outcome.error or "")
    # Without the authorizer the file itself is still opened read-only.
    runner = SqliteSqlRunner({"gym-a": tmp_path / "a.sqlite"}, read_only=False)
    outcome = await runner.run_sql("gym-a", None, "DELETE FROM ticket", {})
    assert not outcome.success and "readonly database" in (outcome.error or "")


async def test_now_can_be_pinned(tmp_path: Path) -> None:
    runner = SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, now="2030-06-01 12:00:00")
    outcome = await runner.run_sql(
        "gym-a", None, "SELECT datetime('now', '-1 day') AS d, date('now') AS e", {}
    )
    assert outcome.body == {"data": [{"d": "2030-05-31 12:00:00", "e": "2030-06-01"}]}


async def test_the_clock_keywords_are_pinned_too(tmp_path: Path) -> None:
    runner = SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, now="2030-06-01 12:00:00")
    query = (
        "SELECT CURRENT_TIMESTAMP AS ts, CURRENT_DATE AS d, CURRENT_TIME AS t, "
        "julianday(CURRENT_TIMESTAMP) - julianday('now') AS drift"
    )
    outcome = await runner.run_sql("gym-a", None, query, {})
    assert outcome.body == {
        "data": [{"ts": "2030-06-01 12:00:00", "d": "2030-06-01", "t": "12:00:00", "drift": 0.0}]
    }


class ScriptedJudge:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[JudgeRequest] = []

    async def __call__(self, request: JudgeRequest) -> str:
        self.requests.append(request)
        return self.reply


def response_check(minimum: int = 7) -> dict[str, Any]:
    return {
        "verifier_type": "response_check",
        "name": "answer",
        "gym_name": "gym-a",
        "validation_config": {
            "sql_query": "SELECT state FROM ticket WHERE id = 1",
            "comparison_prompt": "Is the state reported?",
            "minimum_comparison_value": minimum,
        },
    }


@pytest.mark.parametrize("policy", [PARITY, STRICT], ids=["parity", "strict"])
async def test_response_check_parses_fenced_judge_replies(
    runner: SqliteSqlRunner, policy: Policy
) -> None:
    judge = ScriptedJudge('Sure.\n```json\n{"score": 8, "reasoning": "states closed"}\n```')
    verdict = await verify_task(
        task_with(response_check()),
        sql=runner,
        policy=policy,
        final_response="Ticket 1 is closed.",
        judge=judge,
    )
    assert verdict.success
    assert verdict.results[0].upstream["score"] == 8
    request = judge.requests[0]
    assert "closed" in request.sql_result and request.final_response == "Ticket 1 is closed."
    assert "Is the state reported?" in request.user_prompt
    assert request.temperature == 0.0  # upstream's judge samples at its default temperature 0.0


async def test_response_check_without_judge_or_with_nonsense(runner: SqliteSqlRunner) -> None:
    task = task_with(response_check())
    verdict = await verify_task(task, sql=runner, policy=STRICT)
    assert verdict.failure_kind == "config_error" and "No judge" in (verdict.results[0].error or "")
    verdict = await verify_task(task, sql=runner, policy=STRICT, judge=ScriptedJudge("I think 9"))
    assert verdict.failure_kind == "judge_error" and "not JSON" in (verdict.results[0].error or "")
    parity = await verify_task(
        task, sql=runner, policy=PARITY, judge=ScriptedJudge('{"score": "high"}')
    )
    assert parity.results[0].error and parity.results[0].error.startswith("Judge comparison failed")


async def test_tool_execution_verifier(runner: SqliteSqlRunner) -> None:
    task = task_with(
        {
            "verifier_type": "tool_execution",
            "name": "tools",
            "validation_config": {
                "selected_tools": ["find_ticket", "close_ticket"],
                "minimum_tool_calls": 2,
            },
        }
    )
    ok = await verify_task(task, sql=runner, tool_calls=["find_ticket", {"name": "close_ticket"}])
    short = await verify_task(task, sql=runner, tool_calls=["find_ticket"])
    assert ok.success and not short.success
    assert short.results[0].upstream["missing_tools"] == ["close_ticket"]


async def test_unknown_verifier_type(runner: SqliteSqlRunner) -> None:
    task = task_with({"verifier_type": "vibes", "name": "v", "validation_config": {}})
    parity, strict = await both(task, runner)
    assert parity.results[0].error == "Unsupported verifier type: vibes"
    assert strict.failure_kind == "config_error"


class SlowRunner:
    """Answers after a delay that shrinks with the index, counting concurrency."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        self.active += 1
        self.peak = max(self.peak, self.active)
        value = int(query.split()[1])
        await asyncio.sleep((20 - value) / 2000)
        self.active -= 1
        return SqlOutcome.ok({"data": [{"v": value}]})


async def test_verifiers_run_concurrently_bounded_and_keep_order() -> None:
    runner = SlowRunner()
    task = task_with(*[check(f"SELECT {i}", i, name=f"v{i}") for i in range(20)])
    verdict = await verify_task(task, sql=runner, max_concurrency=4)
    assert verdict.success
    assert [r.name for r in verdict.results] == [f"v{i}" for i in range(20)]
    assert runner.peak == 4


def test_large_integer_strings_stay_exact() -> None:
    assert compare_values(9007199254740993, "9007199254740993", "equals", STRICT).passed
    assert not compare_values(9007199254740993, "9007199254740992", "equals", STRICT).passed


async def test_null_comparison_type_is_reported_as_upstream_does(runner: SqliteSqlRunner) -> None:
    task = task_with(
        {
            "verifier_type": "database_state",
            "name": "n",
            "gym_name": "gym-a",
            "validation_config": {
                "query": "SELECT 1",
                "expected_value": 1,
                "comparison_type": None,
            },
        }
    )
    parity, strict = await both(task, runner)
    assert parity.results[0].details == "Unknown comparison type: None"
    assert strict.failure_kind == "config_error"
    assert task_from_mapping(to_upstream(task)) == task


def test_pinned_now_is_removed_from_lent_connections(tmp_path: Path) -> None:
    connection = sqlite3.connect(make_db(tmp_path / "lent.sqlite"))
    with SqliteSqlRunner({"gym-a": connection}, now="2030-06-01 12:00:00") as runner:
        assert runner.query("gym-a", "SELECT date('now') AS d").body == {
            "data": [{"d": "2030-06-01"}]
        }
    today = connection.execute("SELECT date('now')").fetchone()[0]
    connection.close()
    assert today != "2030-06-01"


async def test_bad_max_concurrency_is_a_usage_error(runner: SqliteSqlRunner) -> None:
    with pytest.raises(UsageError):
        await verify_task(task_with(), sql=runner, max_concurrency=0)


def test_pinned_now_covers_date_functions_without_a_time_value(tmp_path: Path) -> None:
    with SqliteSqlRunner(
        {"gym-a": make_db(tmp_path / "a.sqlite")}, now="2030-06-01 12:00:00"
    ) as runner:
        outcome = runner.query("gym-a", "SELECT date() AS a, datetime() AS b, strftime('%Y') AS c")
    assert outcome.body == {"data": [{"a": "2030-06-01", "b": "2030-06-01 12:00:00", "c": "2030"}]}


@pytest.mark.parametrize("now", ["soon", "20260105T120000"])
def test_unparseable_now_is_a_usage_error(now: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="SQLite understands"):
        SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, now=now)
