"""Paired comparison: 2x2 table, McNemar, seeded bootstrap, TOST."""

from __future__ import annotations

import pytest

from eog_core.metrics import (
    PolicyOutcome,
    RunRecord,
    compare_runs,
    format_comparison,
)


def _run(
    task: int, success: bool, *, repeat: int = 0, completed: bool = True, strict: bool | None = None
) -> RunRecord:
    parity = PolicyOutcome(success=success, pass_rate=1.0 if success else 0.0, completed=completed)
    strict_outcome = None
    if strict is not None:
        strict_outcome = PolicyOutcome(success=strict, pass_rate=1.0 if strict else 0.0)
    return RunRecord(
        task_id=f"t{task:03d}",
        domain="csm",
        mode="oracle",
        repeat=repeat,
        parity=parity,
        strict=strict_outcome,
    )


def _table(
    both: int, only_a: int, only_b: int, neither: int
) -> tuple[list[RunRecord], list[RunRecord]]:
    """One run per task, laid out to give the requested 2x2 table."""
    cells = [(True, True)] * both + [(True, False)] * only_a + [(False, True)] * only_b
    cells += [(False, False)] * neither
    a = [_run(i, sa) for i, (sa, _) in enumerate(cells)]
    b = [_run(i, sb) for i, (_, sb) in enumerate(cells)]
    return a, b


def test_two_by_two_and_mcnemar() -> None:
    a, b = _table(both=10, only_a=1, only_b=6, neither=13)
    result = compare_runs(a, b, n_boot=200)
    assert (result.both_success, result.only_a, result.only_b, result.both_fail) == (10, 1, 6, 13)
    # n = 7 discordant, min 1: 2 * (1 + 7) / 128
    assert result.mcnemar_p == 0.125
    # agreement (10 + 13) / 30; rates A = 11/30, B = 16/30; B - A = 5/30
    assert result.agreement_rate == pytest.approx(23 / 30)
    assert result.task_agreement_rate == pytest.approx(23 / 30)
    assert result.success_rate_a == pytest.approx(11 / 30)
    assert result.success_rate_b == pytest.approx(16 / 30)
    assert result.difference == pytest.approx(5 / 30)
    assert (result.pairs, result.tasks_paired) == (30, 30)


def test_no_discordant_pair() -> None:
    a, b = _table(both=5, only_a=0, only_b=0, neither=5)
    result = compare_runs(a, b, n_boot=100)
    assert result.mcnemar_p == 1.0
    assert result.difference == 0.0
    # Identical outcomes: every bootstrap replicate is 0, the CI is [0, 0].
    assert result.ci95 == (0.0, 0.0)
    assert result.equivalent
    assert (result.tost_p_lower, result.tost_p_upper) == (0.0, 0.0)


def test_bootstrap_is_deterministic_and_covers_the_estimate() -> None:
    a, b = _table(both=40, only_a=7, only_b=12, neither=41)
    first = compare_runs(a, b, n_boot=2000, seed=3)
    again = compare_runs(a, b, n_boot=2000, seed=3)
    assert first == again
    assert first.ci95 is not None
    assert first.ci90 is not None
    assert first.difference is not None
    assert first.ci95[0] <= first.difference <= first.ci95[1]
    # the 90% interval sits inside the 95% one
    assert first.ci95[0] <= first.ci90[0] <= first.ci90[1] <= first.ci95[1]
    other = compare_runs(a, b, n_boot=2000, seed=4)
    assert other.difference == first.difference


def test_tost_equivalent_when_differences_are_small_and_balanced() -> None:
    # 400 tasks, 4 discordant each way: difference 0, bootstrap SE about
    # sqrt(8) / 400 = 0.0071, so the 90% CI is near +/-0.0116: inside +/-0.02.
    a, b = _table(both=150, only_a=4, only_b=4, neither=242)
    result = compare_runs(a, b, margin=0.02, n_boot=2000, seed=0)
    assert result.difference == 0.0
    assert result.equivalent
    assert result.tost_p is not None
    assert result.tost_p < 0.05
    # The same data cannot show equivalence within +/-0.5 pp.
    tight = compare_runs(a, b, margin=0.005, n_boot=2000, seed=0)
    assert not tight.equivalent


def test_tost_not_equivalent_for_a_real_difference() -> None:
    # B wins 30 more tasks of 100: a 30 pp difference is far outside +/-2 pp.
    a, b = _table(both=20, only_a=0, only_b=30, neither=50)
    result = compare_runs(a, b, n_boot=1000)
    assert not result.equivalent
    assert result.tost_p_upper is not None
    assert result.tost_p_upper > 0.5
    assert result.mcnemar_p < 1e-8


def test_repeats_pair_run_by_run_and_errors_are_left_out() -> None:
    a = [_run(1, True, repeat=0), _run(1, False, repeat=1), _run(2, True), _run(3, True)]
    b = [
        _run(1, True, repeat=0),
        _run(1, True, repeat=1),
        _run(2, False, completed=False),
        _run(4, False),
    ]
    result = compare_runs(a, b, n_boot=50)
    # pairs: t1/0 both, t1/1 only B; t2 excluded (B errored); t3 and t4 unpaired
    assert (result.pairs, result.tasks_paired, result.pairs_errored) == (2, 1, 1)
    assert (result.both_success, result.only_b) == (1, 1)
    # t1 has 1 success in A, 2 in B over its paired repeats: tasks disagree
    assert result.task_agreement_rate == 0.0
    assert (result.runs_only_in_a, result.runs_only_in_b) == (1, 1)
    assert result.tasks_only_in_a == (("oracle", "csm", "t003"),)
    assert result.tasks_only_in_b == (("oracle", "csm", "t004"),)


def test_policy_choice() -> None:
    a = [_run(1, True, strict=False), _run(2, True, strict=True)]
    b = [_run(1, True), _run(2, True)]
    # primary: strict on A, parity on B
    assert compare_runs(a, b, n_boot=10).only_b == 1
    assert compare_runs(a, b, n_boot=10, policy="parity").only_b == 0
    strict_only = compare_runs(a, b, n_boot=10, policy="strict")
    assert (strict_only.pairs, strict_only.pairs_without_policy) == (0, 2)
    assert strict_only.difference is None
    assert not strict_only.equivalent
    assert strict_only.tost_p is None


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="margin"):
        compare_runs([], [], margin=0)
    with pytest.raises(ValueError, match="n_boot"):
        compare_runs([], [], n_boot=0)


def test_format_comparison() -> None:
    a, b = _table(both=10, only_a=1, only_b=6, neither=13)
    text = format_comparison(compare_runs(a, b, n_boot=100, seed=1))
    assert "Both succeed: 10   only A: 1   only B: 6   both fail: 13" in text
    assert "McNemar exact p: 0.125" in text
    # 5/30 = 16.67 pp
    assert "B - A: 16.67 pp" in text
    assert "TOST at +/-2.00 pp: not shown equivalent" in text
