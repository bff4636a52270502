"""Offline verifier SQL runs off the event loop and stops at its deadline or on cancellation."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from eog_core import PARITY, STRICT, SqliteSqlRunner, verify_task
from eog_core._sqlguard import QueryInterrupted, execute_guarded
from eog_core.errors import UsageError
from tests.verify.test_strict import check, make_db, task_with

RUNAWAY = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"


async def test_runaway_query_is_a_verifier_error(tmp_path: Path) -> None:
    task = task_with(check(RUNAWAY, 1, name="runaway"), check("SELECT 1", 1, name="fine"))
    with SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, timeout=0.2) as runner:
        strict = await verify_task(task, sql=runner, policy=STRICT)
        parity = await verify_task(task, sql=runner, policy=PARITY)
    runaway, fine = strict.results
    assert (strict.success, strict.evaluation_completed, strict.failure_kind) == (
        False,
        False,
        "verifier_error",
    )
    assert runaway.failure_kind == "verifier_error"
    assert runaway.error == "SQL query failed: query interrupted: it ran past its 0.2s deadline"
    assert fine.passed
    assert parity.results[0].error == runaway.error and not parity.success


async def test_query_runs_off_the_loop_and_stops_when_cancelled(tmp_path: Path) -> None:
    connection = sqlite3.connect(make_db(tmp_path / "a.sqlite"), check_same_thread=False)
    started = threading.Event()

    def mark(value: int) -> int:
        started.set()
        return value

    connection.create_function("mark", 1, mark)
    query = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT mark(n) + 1 FROM c) SELECT count(*) FROM c"
    with SqliteSqlRunner({"gym-a": connection}, timeout=120) as runner:
        verifying = asyncio.create_task(
            verify_task(task_with(check(query, 1)), sql=runner, policy=STRICT)
        )
        assert await asyncio.to_thread(started.wait, 60)  # the loop runs while the query does
        assert not verifying.done()
        verifying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await verifying
        async with asyncio.timeout(60):  # the worker stopped and released the connection
            outcome = await runner.run_sql("gym-a", None, "SELECT count(*) AS n FROM ticket", {})
    assert outcome.body == {"data": [{"n": 2}]}


async def test_thread_bound_lent_connection_still_has_a_deadline(tmp_path: Path) -> None:
    connection = sqlite3.connect(make_db(tmp_path / "a.sqlite"))  # check_same_thread=True
    with SqliteSqlRunner({"gym-a": connection}, timeout=0.2) as runner:
        outcome = await runner.run_sql("gym-a", None, RUNAWAY, {})
        assert not outcome.success and "deadline" in (outcome.error or "")
        again = await runner.run_sql("gym-a", None, "SELECT state FROM ticket WHERE id = 1", {})
    assert again.body == {"data": [{"state": "closed"}]}


def test_sync_query_has_the_deadline_too(tmp_path: Path) -> None:
    with SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, timeout=0.2) as runner:
        outcome = runner.query("gym-a", RUNAWAY)
    assert not outcome.success and "deadline" in (outcome.error or "")


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_timeout_must_be_positive(tmp_path: Path, timeout: float) -> None:
    with pytest.raises(UsageError, match="timeout"):
        SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, timeout=timeout)


HEAVY = "SELECT length(printf('%.*c', 200000000, 'x')) AS n"


async def test_one_heavy_call_fails_and_cannot_build_a_huge_value(tmp_path: Path) -> None:
    """Single SQLite calls the progress handler never interrupts: a failure, never a huge value."""
    with SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}, timeout=0.2) as runner:
        heavy = await runner.run_sql("gym-a", None, HEAVY, {})
        blob = await runner.run_sql("gym-a", None, "SELECT length(zeroblob(900000000)) AS n", {})
        fine = await runner.run_sql(
            "gym-a", None, "SELECT length(printf('%.*c', 1000, 'x')) AS n", {}
        )
    assert not heavy.success
    assert heavy.error in {
        "query interrupted: it ran past its 0.2s deadline",
        "SQLite rejected the query: string or blob too big",
    }
    assert blob.error == "SQLite rejected the query: string or blob too big"
    assert fine.body == {"data": [{"n": 1000}]}


def test_a_statement_that_returns_past_its_deadline_fails(tmp_path: Path) -> None:
    """One step slower than the deadline (the progress handler never runs) is still a timeout."""
    connection = sqlite3.connect(make_db(tmp_path / "a.sqlite"))

    def slow(value: int) -> int:  # one VM step: spins until the deadline has surely passed
        until = time.monotonic() + 0.2
        while time.monotonic() < until:
            pass
        return value

    connection.create_function("slow", 1, slow)
    with pytest.raises(QueryInterrupted, match="deadline"):
        execute_guarded(connection, "SELECT slow(1)", timeout=0.05)
    assert (
        connection.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == 1_000_000_000
    )  # handed back as it came
    assert execute_guarded(connection, "SELECT slow(2)", timeout=30) == (["slow(2)"], [(2,)])
