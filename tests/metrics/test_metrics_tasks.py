"""Task-level metrics against values worked by hand: pass^k, Wilson, flips, bands, wins, usage, cost."""

from __future__ import annotations

import math

import pytest

from eog_core.errors import UsageError
from eog_core.metrics import (
    PolicyOutcome,
    Price,
    RolloutUsage,
    RunRecord,
    corrected_summary,
    histogram,
    mean_flip_rate,
    pass_hat_at,
    pass_hat_k,
    rate_intervals,
    rollout_cost,
    task_bands,
    task_outcomes,
    task_wins,
    usage_stats,
    wilson_interval,
)


def run(task: str, repeat: int, success: bool | None, domain: str = "d") -> RunRecord:
    outcome = (
        PolicyOutcome(success=False, pass_rate=0.0, completed=False, failure_kind="gym_error")
        if success is None
        else PolicyOutcome(success=success, pass_rate=1.0 if success else 0.5)
    )
    return RunRecord(task_id=task, domain=domain, mode="m", repeat=repeat, strict=outcome)


# t1: 3 of 3; t2: 1 of 3; t3: 0 of 2 scored + 1 incomplete; t4: only incomplete
RUNS = (
    [run("t1", r, True) for r in range(3)]
    + [run("t2", 0, True), run("t2", 1, False), run("t2", 2, False)]
    + [run("t3", 0, False), run("t3", 1, None), run("t3", 2, False)]
    + [run("t4", 0, None)]
)


def test_pass_hat_k_is_c_choose_k_over_n_choose_k() -> None:
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_hat_k(4, 1, 2) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson_interval(0.5, 10)  # z = 1.959964: 0.2366 .. 0.7634
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(1.0, 1)
    assert (round(low, 4), high) == (0.2065, 1.0)
    assert wilson_interval(0.0, 5)[0] == 0.0
    with pytest.raises(ValueError):
        wilson_interval(0.5, 0)


def test_task_outcomes_flips_and_bands() -> None:
    outcomes = {o.task_id: o for o in task_outcomes(RUNS, "strict")}
    assert outcomes["t2"].outcomes == (True, False, False)
    assert outcomes["t2"].flip_rate == pytest.approx(2 * 1 * 2 / (3 * 2))  # 2 of 3 pairs disagree
    assert outcomes["t3"].outcomes == (False, None, False)
    assert (outcomes["t3"].scored, outcomes["t3"].errored, outcomes["t3"].flip_rate) == (2, 1, 0.0)
    assert outcomes["t3"].failure_kinds == (None, "gym_error", None)
    assert outcomes["t4"].success_rate is None and outcomes["t4"].flip_rate is None
    assert mean_flip_rate(outcomes.values()) == pytest.approx((0 + 2 / 3 + 0) / 3)
    bands = {b.name: [t.task_id for t in b.tasks] for b in task_bands(outcomes.values())}
    assert bands == {"never": ["t3"], "mixed": ["t2"], "always": ["t1"], "unscored": ["t4"]}
    assert task_outcomes(RUNS, "parity") == ()


def test_pass_hat_at_averages_over_tasks_with_k_scored_runs() -> None:
    outcomes = task_outcomes(RUNS, "strict")
    found = {p.k: (p.value, p.tasks) for p in pass_hat_at(outcomes, (1, 2, 3))}
    assert found[1] == (pytest.approx((1 + 1 / 3 + 0) / 3), 3)
    assert found[2] == (pytest.approx((1 + 0 + 0) / 3), 3)
    assert found[3] == (pytest.approx((1 + 0) / 2), 2)
    # pass^1 is pass@1 (the task-weighted success rate)
    stats = corrected_summary(RUNS).overall.strict
    assert stats is not None and found[1][0] == pytest.approx(stats.task_success_rate)


def test_rate_intervals_take_the_scored_tasks_as_the_unit() -> None:
    stats = corrected_summary(RUNS).overall.strict
    assert stats is not None
    intervals = rate_intervals(stats)
    assert intervals.tasks == 3
    assert intervals.task_success == wilson_interval(stats.task_success_rate or 0.0, 3)
    assert intervals.run_success == wilson_interval(stats.run_success_rate or 0.0, 3)


def test_task_wins_pairs_tasks_scored_on_both_sides() -> None:
    other = (
        [run("t1", r, False) for r in range(3)]
        + [run("t2", r, True) for r in range(3)]
        + [run("t5", 0, True)]
    )
    wins = task_wins(task_outcomes(RUNS, "strict"), task_outcomes(other, "strict"))
    assert (wins.wins, wins.losses, wins.ties) == (1, 1, 0)
    assert [(d.task_id, d.difference) for d in wins.tasks] == [
        ("t2", pytest.approx(2 / 3)),
        ("t1", -1.0),
    ]


def test_price_parse_and_cost_with_and_without_a_cached_price() -> None:
    assert Price.parse("m=2,8,0.5") == Price(
        model="m", input_per_million=2, output_per_million=8, cached_per_million=0.5
    )
    for bad in ("m=2", "=1,2", "m=a,b", "m=1,-2", "m=1,2,3,4"):
        with pytest.raises(UsageError):
            Price.parse(bad)
    usage = RolloutUsage.from_record(
        {
            "model": "m",
            "num_turns": 2,
            "num_tool_calls": 3,
            "duration_ms": 10,
            "usage": {"input_tokens": 1000, "cached_tokens": 400, "output_tokens": 100},
            "token_ids": [1, 2],
        }
    )
    assert rollout_cost(usage, Price.parse("m=2,8,0.5")) == pytest.approx(
        (600 * 2 + 400 * 0.5 + 100 * 8) / 1e6
    )
    assert rollout_cost(usage, Price.parse("m=2,8")) == pytest.approx((1000 * 2 + 100 * 8) / 1e6)
    stats = usage_stats(
        [usage, RolloutUsage.from_record({"model": "m", "usage": None})],
        {"m": Price.parse("m=2,8")},
    )
    assert (stats.rollouts, stats.mean_turns, stats.input_tokens, stats.mean_tokens) == (
        2,
        1.0,
        1000,
        550.0,
    )
    assert stats.cost == pytest.approx(2800 / 1e6)
    assert usage_stats([usage], {}).cost is None


def test_histogram_bins_the_range() -> None:
    assert histogram([0, 1, 2, 3, 4], bins=2).counts == (2, 3)
    assert histogram([5, 5]).counts == (2,)
    assert histogram([]).counts == ()
    assert histogram([1.0, math.inf, 2.0], bins=1).counts == (2,)
