"""verify_task runs a task's queries concurrently, keeps order, and leaves no query behind.

The runner here is a test peer implementing the SqlRunner protocol: queries
``SELECT <n>`` wait at a gate the test opens, ``SELECT raise_eog`` raises a
GymError (a runner that raises instead of answering) and ``SELECT raise_bug``
raises a RuntimeError (a programming error). Nothing waits on time.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Mapping
from typing import Any

import pytest

from eog_core import STRICT, SqlOutcome, Task, verify_task
from eog_core.errors import GymError
from tests.verify.test_strict import check, task_with


class GateRunner:
    """Answers ``SELECT n`` with n once the gate opens; counts what is in flight."""

    def __init__(self, expected_in_flight: int) -> None:
        self.gate = asyncio.Event()
        self.all_started = asyncio.Event()
        self.expected_in_flight = expected_in_flight
        self.active = self.peak = self.cancelled = 0

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        word = query.split()[1]
        if word == "raise_eog":
            raise GymError("the gym hung up")
        if word == "raise_bug":
            raise RuntimeError("a bug in the runner")
        self.active += 1
        self.peak = max(self.peak, self.active)
        if self.active == self.expected_in_flight:
            self.all_started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.active -= 1
        return SqlOutcome.ok({"data": [{"v": int(word)}]})


def checks(*words: str) -> Any:
    return task_with(
        *[
            check(f"SELECT {word}", int(word) if word.isdigit() else 0, name=f"v{i}")
            for i, word in enumerate(words)
        ]
    )


async def test_all_queries_are_in_flight_at_once_within_the_bound() -> None:
    runner = GateRunner(expected_in_flight=5)
    verifying = asyncio.create_task(verify_task(checks("0", "1", "2", "3", "4"), sql=runner))
    async with asyncio.timeout(60):
        await runner.all_started.wait()
        assert runner.active == 5
        runner.gate.set()
        verdict = await verifying
    assert verdict.success and [r.actual for r in verdict.results] == [0, 1, 2, 3, 4]
    assert runner.peak == 5


async def test_a_runner_raising_eog_error_fails_only_its_verifiers() -> None:
    runner = GateRunner(expected_in_flight=2)
    runner.gate.set()
    verdict = await verify_task(
        checks("raise_eog", "1", "raise_eog", "3"), sql=runner, policy=STRICT
    )
    assert [r.passed for r in verdict.results] == [False, True, False, True]
    assert [r.failure_kind for r in verdict.results] == [
        "gym_unreachable",
        None,
        "gym_unreachable",
        None,
    ]
    assert (
        verdict.results[0].error == verdict.results[2].error == "SQL query failed: the gym hung up"
    )
    assert verdict.failure_kind == "gym_unreachable"


async def test_cancelling_verify_task_cancels_every_query_and_waits_for_them() -> None:
    runner = GateRunner(expected_in_flight=4)
    verifying = asyncio.create_task(verify_task(checks("0", "1", "2", "3"), sql=runner))
    async with asyncio.timeout(60):
        await runner.all_started.wait()
        verifying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await verifying
    assert (runner.cancelled, runner.active) == (4, 0)


async def test_a_runner_bug_propagates_and_stops_the_other_queries() -> None:
    runner = GateRunner(expected_in_flight=2)
    verifying = asyncio.create_task(verify_task(checks("1", "raise_bug", "2"), sql=runner))
    async with asyncio.timeout(60):
        await runner.all_started.wait()
        runner.gate.set()  # the bug surfaces once the queries defined before it answered
        with pytest.raises(RuntimeError, match="a bug in the runner"):
            await verifying
    assert runner.active == 0


async def test_a_runner_bug_in_the_first_query_stops_the_others_before_they_run() -> None:
    runner = GateRunner(expected_in_flight=2)
    async with asyncio.timeout(60):
        with pytest.raises(RuntimeError, match="a bug in the runner"):
            await verify_task(checks("raise_bug", "1", "2"), sql=runner)
    assert (runner.peak, runner.active) == (0, 0)


async def test_no_failure_is_left_unretrieved() -> None:
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        runner = GateRunner(expected_in_flight=1)
        verifying = asyncio.create_task(
            verify_task(checks("0", "raise_bug", "raise_bug"), sql=runner)
        )
        async with asyncio.timeout(60):
            await runner.all_started.wait()
            runner.gate.set()
            with pytest.raises(RuntimeError):
                await verifying
        del verifying
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_without_a_runner_every_query_fails_as_unreachable() -> None:
    verdict = await verify_task(checks("1", "2"), sql=None)
    assert [r.failure_kind for r in verdict.results] == ["gym_unreachable", "gym_unreachable"]
    assert verdict.results[1].error == "SQL query failed: no SQL runner was given to verify_task"


async def test_a_task_without_gyms_fails_its_queries() -> None:
    runner = GateRunner(expected_in_flight=1)
    built = task_with(check("SELECT 1", 1, name="a"), check("SELECT 2", 2, name="b", gym=None))
    verdict = await verify_task(Task(user_prompt="u", verifiers=built.verifiers), sql=runner)
    assert [r.failure_kind for r in verdict.results] == ["config_error", "verifier_error"]
    assert verdict.results[1].error == "SQL query failed: the task has no gym to run the query on"
