"""The one backoff rule: doubling from ``initial``, capped at ``maximum``, then jittered."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._backoff import backoff_delay


def test_no_jitter_doubles_to_the_cap() -> None:
    delays = [backoff_delay(n, initial=0.5, maximum=3.0, jitter="none") for n in range(1, 6)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_attempt_zero_or_less_waits_the_initial_delay() -> None:
    assert backoff_delay(0, initial=0.25, maximum=9.0, jitter="none") == 0.25
    assert backoff_delay(-3, initial=0.25, maximum=9.0, jitter="none") == 0.25


def test_a_huge_attempt_with_no_cap_does_not_overflow() -> None:
    delay = backoff_delay(10**9, initial=1.0, maximum=math.inf, jitter="none")
    assert math.isfinite(delay) and delay == 2.0**62


@given(
    attempt=st.integers(1, 200),
    initial=st.floats(0.001, 10.0),
    maximum=st.floats(0.001, 100.0),
    seed=st.integers(0, 2**32),
)
def test_jitter_stays_inside_its_interval(
    attempt: int, initial: float, maximum: float, seed: int
) -> None:
    ceiling = backoff_delay(attempt, initial=initial, maximum=maximum, jitter="none")
    assert ceiling == min(maximum, initial * 2 ** min(attempt - 1, 62))
    rng = random.Random(seed)
    full = backoff_delay(attempt, initial=initial, maximum=maximum, jitter="full", rng=rng)
    equal = backoff_delay(attempt, initial=initial, maximum=maximum, jitter="equal", rng=rng)
    assert 0.0 <= full <= ceiling
    assert ceiling / 2 <= equal <= ceiling


@pytest.mark.parametrize("jitter", ["full", "equal"])
def test_jitter_spreads_the_delays(jitter: str) -> None:
    rng = random.Random(7)
    draws = {
        backoff_delay(3, initial=1.0, maximum=10.0, jitter=jitter, rng=rng)  # type: ignore[arg-type]
        for _ in range(50)
    }
    assert len(draws) == 50
    low = 0.0 if jitter == "full" else 2.0
    assert min(draws) < low + 0.5 and max(draws) > 3.5
