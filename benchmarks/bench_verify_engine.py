"""The verifier engine's own CPU per task: ``verify_task`` with 5 database_state verifiers.

Run with ``nox -s bench`` (or ``pytest benchmarks/bench_verify_engine.py``). An
in-process runner answers canned gym bodies (decoded per call as the HTTP
runner decodes them), so what is timed is the engine (issue #12's client CPU):
preparing the verifiers, running their queries concurrently, scoring,
aggregating. ``benchmarks/verify_engine_vs_ref.py`` compares it with another
revision side by side.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eog_core
from verify_engine_workloads import WORKLOADS, CannedRunner, build_task, verify_many

CALLS = 100


@pytest.mark.parametrize("suspend", [False, True], ids=["immediate", "suspending"])
@pytest.mark.parametrize("policy", ["STRICT", "PARITY"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_verify_task_five_verifiers(
    benchmark: BenchmarkFixture, workload: str, policy: str, suspend: bool
) -> None:
    """100 verify_task calls per round: divide the time by 100 for one task."""
    benchmark.group = f"verify_task-5x{CALLS}"
    checks = WORKLOADS[workload]
    task, runner = build_task(eog_core, checks), CannedRunner(eog_core, checks, suspend=suspend)
    loop = asyncio.new_event_loop()
    try:
        verdict = benchmark(
            lambda: loop.run_until_complete(
                verify_many(eog_core, task, runner, getattr(eog_core, policy), CALLS)
            )
        )
    finally:
        loop.close()
    assert verdict.num_scored == 5 and verdict.evaluation_completed
    benchmark.extra_info["us_per_verify_task"] = benchmark.stats.stats.median / CALLS * 1e6


async def _trivial(value: int) -> int:
    return value


async def _gathers(count: int) -> None:
    for _ in range(count):
        await asyncio.gather(*(_trivial(i) for i in range(5)))


def test_gather_of_five_trivial_coroutines_floor(benchmark: BenchmarkFixture) -> None:
    """What running 5 queries concurrently costs with nothing else: asyncio's own floor."""
    benchmark.group = f"verify_task-5x{CALLS}"
    loop = asyncio.new_event_loop()
    try:
        benchmark(lambda: loop.run_until_complete(_gathers(CALLS)))
    finally:
        loop.close()
