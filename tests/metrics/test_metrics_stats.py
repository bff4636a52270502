"""Exact statistics against values worked by hand."""

from __future__ import annotations

import math

import pytest

from eog_core.metrics import mcnemar_exact_p, pass_at_k
from eog_core.metrics._stats import (
    bootstrap_differences,
    normal_cdf,
    percentile,
    standard_deviation,
    tost_normal_p_values,
)


@pytest.mark.parametrize(
    ("only_a", "only_b", "expected"),
    [
        # n = 7, min = 1: 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * (1 + 7) / 128 = 0.125
        (1, 6, 0.125),
        (6, 1, 0.125),
        # no discordant pair: p = 1 by definition
        (0, 0, 1.0),
        # n = 2, min = 1: 2 * (1 + 2) / 4 = 1.5 -> capped at 1
        (1, 1, 1.0),
        # n = 5, min = 0: 2 * 1 / 32 = 0.0625
        (0, 5, 0.0625),
        # n = 10, min = 2: 2 * (1 + 10 + 45) / 1024 = 112 / 1024 = 0.109375
        (2, 8, 0.109375),
    ],
)
def test_mcnemar_exact_small_tables(only_a: int, only_b: int, expected: float) -> None:
    assert expected == mcnemar_exact_p(only_a, only_b)


def test_mcnemar_large_n_stays_finite() -> None:
    # 2000 discordant pairs split evenly: the p-value is close to (but below) 1.
    p = mcnemar_exact_p(1000, 1000)
    assert 0.9 < p <= 1.0


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact_p(-1, 3)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # 1 - C(3,1)/C(5,1) = 1 - 3/5 = 0.4
        (5, 2, 1, 0.4),
        # 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
        (5, 2, 2, 0.7),
        # 1 - C(3,3)/C(5,3) = 1 - 1/10 = 0.9
        (5, 2, 3, 0.9),
        # n - c = 3 < k = 4: every draw of 4 holds a success
        (5, 2, 4, 1.0),
        # no success at all: 0
        (5, 0, 3, 0.0),
        # single attempt: the outcome itself
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_small_cases(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_binomials_for_large_n() -> None:
    # The product form equals the binomial ratio where the latter is still computable.
    n, c, k = 200, 37, 10
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_pass_at_k_rejects_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need"):
        pass_at_k(n, c, k)


def test_percentile_interpolates_linearly() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.0) == 0.0
    assert percentile(values, 1.0) == 4.0
    # position 0.5 * 4 = 2 -> 2.0; position 0.1 * 4 = 0.4 -> 0.4
    assert percentile(values, 0.5) == 2.0
    assert percentile(values, 0.1) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_normal_cdf_known_points() -> None:
    assert normal_cdf(0.0) == 0.5
    assert normal_cdf(1.959963984540054) == pytest.approx(0.975, abs=1e-12)


def test_tost_normal_p_values() -> None:
    # difference 0, se 0.01, margin 0.02: both z = 2 -> p = 1 - Phi(2) = 0.02275...
    lower, upper = tost_normal_p_values(0.0, 0.01, 0.02)
    assert lower == pytest.approx(0.0227501319, abs=1e-9)
    assert upper == pytest.approx(0.0227501319, abs=1e-9)
    # zero standard error: decided by the point estimate alone
    assert tost_normal_p_values(0.0, 0.0, 0.02) == (0.0, 0.0)
    assert tost_normal_p_values(0.05, 0.0, 0.02) == (0.0, 1.0)


def test_tost_p_values_far_in_the_tails_do_not_underflow_to_zero() -> None:
    # z = 10 on each side: Phi(-10) = 7.6198530241604696e-24, which 1 - cdf(10) rounds to 0.
    lower, upper = tost_normal_p_values(0.0, 0.01, 0.1)
    assert lower == pytest.approx(7.6198530241605e-24, rel=1e-9, abs=0)
    assert upper == pytest.approx(7.6198530241605e-24, rel=1e-9, abs=0)
    assert normal_cdf(-38.0) == pytest.approx(
        2.88542835e-316, rel=1e-6, abs=0
    )  # a subnormal, not 0


def test_bootstrap_is_seeded_and_sorted() -> None:
    clusters = [(1, 1, 0), (1, 0, 1), (2, 1, 2), (1, 0, 0), (3, 3, 1)]
    first = bootstrap_differences(clusters, n_boot=500, seed=7)
    again = bootstrap_differences(clusters, n_boot=500, seed=7)
    assert first == again
    assert first == sorted(first)
    assert len(first) == 500
    assert bootstrap_differences([], n_boot=10, seed=0) == []


def test_standard_deviation() -> None:
    # mean 2, squared deviations 1 + 0 + 1 = 2, / (3 - 1) = 1
    assert standard_deviation([1.0, 2.0, 3.0]) == 1.0
    assert standard_deviation([5.0]) == 0.0
