"""``InFlight.enter`` + ``leave`` (every gym request) on asyncio's private current-task dict
(3.11's ``asyncio.tasks._current_tasks``) against the public ``asyncio.current_task``.

From 3.12 ``current_task`` is C and the private name is not used. ``python
benchmarks/bench_in_flight.py`` prints the pair with ``timeit``, side by side.
"""

from __future__ import annotations

import asyncio
import sys
import timeit

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from eog_core.gym import _in_flight
from eog_core.gym._in_flight import InFlight

PRIVATE = _in_flight._CURRENT_TASKS


def _enter_leave(calls: InFlight) -> None:
    task = calls.enter()
    calls.leave(task)


@pytest.mark.skipif(PRIVATE is None, reason="no private current-task dict on this Python")
@pytest.mark.parametrize("path", ["private", "public"])
def test_in_flight_enter_leave(
    benchmark: BenchmarkFixture, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    benchmark.group = "in-flight"
    monkeypatch.setattr(_in_flight, "_CURRENT_TASKS", PRIVATE if path == "private" else None)

    async def main() -> None:
        calls = InFlight()
        benchmark(_enter_leave, calls)
        assert not calls

    asyncio.run(main())


async def _side_by_side() -> dict[str, float]:
    calls = InFlight()
    best: dict[str, float] = {}
    for name, value in [("private", PRIVATE), ("public", None)] * 3:  # interleaved rounds
        _in_flight._CURRENT_TASKS = value
        seconds = min(timeit.repeat(lambda: _enter_leave(calls), number=100_000, repeat=5))
        best[name] = min(best.get(name, seconds), seconds)
    _in_flight._CURRENT_TASKS = PRIVATE
    return best


if __name__ == "__main__":
    if PRIVATE is None:
        sys.exit(f"Python {sys.version.split()[0]} has no private current-task dict to measure")
    best = asyncio.run(_side_by_side())
    private, public = (best[k] / 100_000 * 1e9 for k in ("private", "public"))
    print(f"InFlight enter+leave: {private:.0f} ns vs {public:.0f} ns ({public / private:.2f}x)")
