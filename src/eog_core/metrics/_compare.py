"""Paired comparison of two evaluations of the same tasks (e.g. ours against upstream).

Pairing is by run: (mode, domain, task id, repeat), so repeat ``i`` of A meets
repeat ``i`` of B. A pair where either side did not complete its evaluation is
counted apart and left out. On the pairs:

* the 2x2 table (both succeed / only A / only B / both fail), the run-level
  agreement rate and the task-level agreement rate (tasks whose paired runs
  have the same number of successes on both sides);
* the exact two-sided McNemar p-value on the discordant pairs;
* ``difference = rate(B) - rate(A)`` with a percentile bootstrap CI that
  resamples *tasks* with replacement (all repeats of a task travel together),
  seeded so the numbers repeat;
* TOST equivalence at ``margin``: equivalent when the bootstrap 90% CI lies
  inside ``(-margin, +margin)``. The two one-sided p-values come from a normal
  approximation using the bootstrap standard error; the decision uses the CI.
  Equivalence is only judged on at least ``min_tasks`` paired tasks: resampling
  a handful of tasks gives an interval far narrower than the real uncertainty
  (one task gives a zero-width interval), which would "prove" equivalence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import attrs

from eog_core._plumbing import percent
from eog_core.errors import UsageError
from eog_core.metrics._records import PolicyName, RunRecord, TaskKey
from eog_core.metrics._results import MetricsInput, as_run_records
from eog_core.metrics._stats import (
    bootstrap_differences,
    mcnemar_exact_p,
    percentile,
    standard_deviation,
    tost_normal_p_values,
)

__all__ = ["RunComparison", "compare_runs", "format_comparison"]

RunKey = tuple[str, str, str, int]


@attrs.frozen(kw_only=True)
class RunComparison:
    """The paired comparison of A and B; rates and differences are fractions."""

    policy: str
    pairs: int
    tasks_paired: int
    both_success: int
    only_a: int
    only_b: int
    both_fail: int
    agreement_rate: float | None
    task_agreement_rate: float | None
    success_rate_a: float | None
    success_rate_b: float | None
    difference: float | None
    mcnemar_p: float
    ci95: tuple[float, float] | None
    ci90: tuple[float, float] | None
    bootstrap_se: float | None
    margin: float
    equivalent: bool
    tost_p_lower: float | None
    tost_p_upper: float | None
    n_boot: int
    seed: int
    min_tasks: int = 1
    equivalence_note: str | None = None
    """Why equivalence was not judged (too few paired tasks), else None."""
    pairs_errored: int = 0
    pairs_without_policy: int = 0
    runs_only_in_a: int = 0
    runs_only_in_b: int = 0
    tasks_only_in_a: tuple[TaskKey, ...] = ()
    tasks_only_in_b: tuple[TaskKey, ...] = ()

    @property
    def tost_p(self) -> float | None:
        """The TOST p-value: the larger of the two one-sided ones."""
        if self.tost_p_lower is None or self.tost_p_upper is None:
            return None
        return max(self.tost_p_lower, self.tost_p_upper)


def _by_run(items: Iterable[MetricsInput]) -> dict[RunKey, RunRecord]:
    runs, _ = as_run_records(items)
    return {(r.mode, r.domain, r.task_id, r.repeat): r for r in runs}


def compare_runs(
    a: Iterable[MetricsInput],
    b: Iterable[MetricsInput],
    *,
    margin: float = 0.02,
    n_boot: int = 10000,
    seed: int = 0,
    policy: PolicyName | None = None,
    min_tasks: int = 10,
) -> RunComparison:
    """Compare evaluation B against evaluation A, run by run.

    ``policy`` picks the outcome compared on each side; ``None`` takes each
    record's primary outcome (strict when present, else parity), so our strict
    verdicts can be set against upstream's files.
    """
    if not 0 < margin < 1:
        raise UsageError(f"margin must be a fraction between 0 and 1 (0.02 = 2 pp), got {margin}")
    if min_tasks < 1:
        raise UsageError(f"min_tasks must be at least 1, got {min_tasks}")
    if n_boot < 1:
        raise UsageError(f"n_boot must be at least 1, got {n_boot}")
    runs_a, runs_b = _by_run(a), _by_run(b)
    counts = {"both": 0, "a": 0, "b": 0, "none": 0, "errored": 0, "no_policy": 0}
    per_task: dict[TaskKey, list[int]] = defaultdict(lambda: [0, 0, 0])
    for key in sorted(runs_a.keys() & runs_b.keys()):
        outcome_a = runs_a[key].outcome(policy)
        outcome_b = runs_b[key].outcome(policy)
        if outcome_a is None or outcome_b is None:
            counts["no_policy"] += 1
            continue
        if not (outcome_a.completed and outcome_b.completed):
            counts["errored"] += 1
            continue
        success_a, success_b = outcome_a.success, outcome_b.success
        cell = ("both" if success_b else "a") if success_a else ("b" if success_b else "none")
        counts[cell] += 1
        task = per_task[key[:3]]
        task[0] += 1
        task[1] += success_a
        task[2] += success_b

    pairs = counts["both"] + counts["a"] + counts["b"] + counts["none"]
    clusters = [(n, sa, sb) for n, sa, sb in per_task.values()]
    rate_a = rate_b = difference = se = None
    ci95 = ci90 = None
    p_lower = p_upper = None
    equivalent = False
    if pairs:
        rate_a = (counts["both"] + counts["a"]) / pairs
        rate_b = (counts["both"] + counts["b"]) / pairs
        difference = rate_b - rate_a
        replicates = bootstrap_differences(clusters, n_boot=n_boot, seed=seed)
        ci95 = (percentile(replicates, 0.025), percentile(replicates, 0.975))
        ci90 = (percentile(replicates, 0.05), percentile(replicates, 0.95))
        se = standard_deviation(replicates)
        p_lower, p_upper = tost_normal_p_values(difference, se, margin)
        equivalent = -margin < ci90[0] and ci90[1] < margin
    note = None
    if len(per_task) < min_tasks:
        equivalent = False
        note = (
            f"not judged: {len(per_task)} paired task(s), equivalence needs at least {min_tasks} "
            "(a bootstrap over so few tasks understates the uncertainty)"
        )

    tasks_a = {key[:3] for key in runs_a}
    tasks_b = {key[:3] for key in runs_b}
    return RunComparison(
        policy=policy or "primary",
        pairs=pairs,
        tasks_paired=len(per_task),
        both_success=counts["both"],
        only_a=counts["a"],
        only_b=counts["b"],
        both_fail=counts["none"],
        agreement_rate=(counts["both"] + counts["none"]) / pairs if pairs else None,
        task_agreement_rate=(
            sum(1 for _, sa, sb in clusters if sa == sb) / len(clusters) if clusters else None
        ),
        success_rate_a=rate_a,
        success_rate_b=rate_b,
        difference=difference,
        mcnemar_p=mcnemar_exact_p(counts["a"], counts["b"]),
        ci95=ci95,
        ci90=ci90,
        bootstrap_se=se,
        margin=margin,
        equivalent=equivalent,
        min_tasks=min_tasks,
        equivalence_note=note,
        tost_p_lower=p_lower,
        tost_p_upper=p_upper,
        n_boot=n_boot,
        seed=seed,
        pairs_errored=counts["errored"],
        pairs_without_policy=counts["no_policy"],
        runs_only_in_a=len(runs_a.keys() - runs_b.keys()),
        runs_only_in_b=len(runs_b.keys() - runs_a.keys()),
        tasks_only_in_a=tuple(sorted(tasks_a - tasks_b)),
        tasks_only_in_b=tuple(sorted(tasks_b - tasks_a)),
    )


def _interval(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{percent(ci[0])}, {percent(ci[1])}]"


def format_comparison(comparison: RunComparison) -> str:
    """The comparison as text; rates and differences in percentage points, two decimals."""
    c = comparison
    p = "-" if c.tost_p is None else f"{c.tost_p:.4g}"
    policy = (
        "each side's primary outcome: strict where present, else parity"
        if c.policy == "primary"
        else c.policy
    )
    verdict = c.equivalence_note or ("equivalent" if c.equivalent else "not shown equivalent")
    lines = [
        f"PAIRED COMPARISON (B vs A; policy: {policy})",
        f"Paired runs: {c.pairs} over {c.tasks_paired} tasks   "
        f"errored pairs excluded: {c.pairs_errored}   "
        f"without the policy: {c.pairs_without_policy}",
        f"Success A: {percent(c.success_rate_a)} %   B: {percent(c.success_rate_b)} %   "
        f"B - A: {percent(c.difference)} pp",
        f"Both succeed: {c.both_success}   only A: {c.only_a}   only B: {c.only_b}   "
        f"both fail: {c.both_fail}",
        f"Agreement: runs {percent(c.agreement_rate)} %   tasks {percent(c.task_agreement_rate)} %",
        f"McNemar exact p: {c.mcnemar_p:.4g}",
        f"Bootstrap ({c.n_boot} resamples of tasks, seed {c.seed}): "
        f"95% CI {_interval(c.ci95)} pp   90% CI {_interval(c.ci90)} pp",
        f"TOST at +/-{percent(c.margin)} pp: {verdict} (normal-approx p = {p})",
        f"Runs only in A: {c.runs_only_in_a}   only in B: {c.runs_only_in_b}   "
        f"tasks only in A: {len(c.tasks_only_in_a)}   only in B: {len(c.tasks_only_in_b)}",
    ]
    return "\n".join(lines)
