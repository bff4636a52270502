"""Task by task across repeats: outcomes, flips, pass^k, intervals and RL task bands.

A task's repeats are judged under one policy; a repeat whose evaluation did
not complete is shown (``None``) but left out of every rate, as in the
corrected summary.

* ``flip_rate`` of a task: the fraction of pairs of its scored repeats whose
  outcomes differ, ``2c(n-c) / (n(n-1))`` (how often two identical runs
  disagree on it); the run-level figure is the mean over tasks with two or
  more scored repeats.
* pass^k (every one of k attempts succeeds) uses the unbiased
  ``C(c, k) / C(n, k)``, averaged over the tasks with at least k scored runs.
* ``rate_intervals`` gives Wilson intervals with the *task* as the unit (repeats
  of a task are not independent draws), which is conservative for a mean of
  per-task fractions.
* Task bands group tasks by success rate over repeats; the ``mixed`` band holds
  the groups whose repeats disagree, the only ones with a learning signal for
  group-relative RL (GRPO).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import attrs

from eog_core.metrics._records import PolicyName, RunRecord, TaskKey
from eog_core.metrics._results import MetricsInput, PassAtK, PolicyStats, as_run_records
from eog_core.metrics._stats import pass_hat_k, wilson_interval

__all__ = [
    "RateIntervals",
    "TaskBand",
    "TaskDifference",
    "TaskOutcome",
    "TaskWins",
    "mean_flip_rate",
    "pass_hat_at",
    "rate_intervals",
    "task_bands",
    "task_outcomes",
    "task_wins",
]


@attrs.frozen(kw_only=True)
class TaskOutcome:
    """One task under one policy: each repeat's outcome (``None`` = not evaluated) and rates."""

    mode: str
    domain: str
    task_id: str
    repeats: tuple[int, ...]
    outcomes: tuple[bool | None, ...]
    failure_kinds: tuple[str | None, ...]
    successes: int
    scored: int
    errored: int
    success_rate: float | None
    flip_rate: float | None

    @property
    def task_key(self) -> TaskKey:
        return (self.mode, self.domain, self.task_id)


def _outcome(key: TaskKey, runs: Sequence[RunRecord], policy: PolicyName) -> TaskOutcome | None:
    ordered = sorted(runs, key=lambda r: r.repeat)
    repeats: list[int] = []
    outcomes: list[bool | None] = []
    kinds: list[str | None] = []
    for run in ordered:
        outcome = run.outcome(policy)
        if outcome is None:
            continue
        repeats.append(run.repeat)
        outcomes.append(outcome.success if outcome.completed else None)
        kinds.append(None if outcome.completed else outcome.failure_kind or "unknown")
    if not repeats:
        return None
    scored = [o for o in outcomes if o is not None]
    n, c = len(scored), sum(scored)
    return TaskOutcome(
        mode=key[0],
        domain=key[1],
        task_id=key[2],
        repeats=tuple(repeats),
        outcomes=tuple(outcomes),
        failure_kinds=tuple(kinds),
        successes=c,
        scored=n,
        errored=len(outcomes) - n,
        success_rate=c / n if n else None,
        flip_rate=2 * c * (n - c) / (n * (n - 1)) if n >= 2 else None,
    )


def task_outcomes(items: Iterable[MetricsInput], policy: PolicyName) -> tuple[TaskOutcome, ...]:
    """Every task with a run under ``policy``, sorted by (mode, domain, task id)."""
    runs, _ = as_run_records(items)
    by_task: dict[TaskKey, list[RunRecord]] = defaultdict(list)
    for run in runs:
        by_task[run.task_key].append(run)
    found = (_outcome(key, by_task[key], policy) for key in sorted(by_task))
    return tuple(outcome for outcome in found if outcome is not None)


def mean_flip_rate(outcomes: Iterable[TaskOutcome]) -> float | None:
    """The mean per-task flip rate over tasks with at least two scored repeats."""
    rates = [o.flip_rate for o in outcomes if o.flip_rate is not None]
    return math.fsum(rates) / len(rates) if rates else None


def pass_hat_at(outcomes: Sequence[TaskOutcome], ks: Iterable[int]) -> tuple[PassAtK, ...]:
    """pass^k for each k: mean over tasks with at least ``k`` scored runs."""
    found = []
    for k in ks:
        values = [pass_hat_k(o.scored, o.successes, k) for o in outcomes if o.scored >= k]
        found.append(
            PassAtK(
                k=k, value=math.fsum(values) / len(values) if values else None, tasks=len(values)
            )
        )
    return tuple(found)


@attrs.frozen(kw_only=True)
class RateIntervals:
    """Wilson intervals (``confidence``) of a group's rates, over ``tasks`` units; None when undefined."""

    confidence: float
    tasks: int
    run_success: tuple[float, float] | None
    task_success: tuple[float, float] | None
    verifier_pass: tuple[float, float] | None


def rate_intervals(stats: PolicyStats, confidence: float = 0.95) -> RateIntervals:
    """Intervals around the rates of :class:`PolicyStats` with its scored tasks as the unit."""
    n = stats.tasks_scored

    def interval(rate: float | None) -> tuple[float, float] | None:
        return None if rate is None or n < 1 else wilson_interval(rate, n, confidence)

    return RateIntervals(
        confidence=confidence,
        tasks=n,
        run_success=interval(stats.run_success_rate),
        task_success=interval(stats.task_success_rate),
        verifier_pass=interval(stats.verifier_pass_rate),
    )


@attrs.frozen(kw_only=True)
class TaskBand:
    """Tasks whose success rate over repeats lies in ``[low, high]`` (``name`` says which;
    ``mixed`` excludes both ends; None bounds: no evaluated repeat)."""

    name: str
    low: float | None
    high: float | None
    tasks: tuple[TaskOutcome, ...]


def task_bands(outcomes: Iterable[TaskOutcome]) -> tuple[TaskBand, ...]:
    """``never`` (rate 0), ``mixed`` (repeats disagree: 0 < rate < 1), ``always`` (rate 1)
    and ``unscored`` (no evaluated repeat), each listing its tasks."""
    never: list[TaskOutcome] = []
    mixed: list[TaskOutcome] = []
    always: list[TaskOutcome] = []
    unscored: list[TaskOutcome] = []
    for outcome in outcomes:
        if outcome.success_rate is None:
            unscored.append(outcome)
        elif outcome.successes == 0:
            never.append(outcome)
        elif outcome.successes == outcome.scored:
            always.append(outcome)
        else:
            mixed.append(outcome)
    mixed.sort(key=lambda o: (abs((o.success_rate or 0.0) - 0.5), o.task_key))
    return (
        TaskBand(name="never", low=0.0, high=0.0, tasks=tuple(never)),
        TaskBand(name="mixed", low=0.0, high=1.0, tasks=tuple(mixed)),
        TaskBand(name="always", low=1.0, high=1.0, tasks=tuple(always)),
        TaskBand(name="unscored", low=None, high=None, tasks=tuple(unscored)),
    )


@attrs.frozen(kw_only=True)
class TaskDifference:
    """One task scored in both A and B: its success rate over repeats on each side."""

    mode: str
    domain: str
    task_id: str
    rate_a: float
    rate_b: float

    @property
    def difference(self) -> float:
        return self.rate_b - self.rate_a


@attrs.frozen(kw_only=True)
class TaskWins:
    """B against A task by task: wins (B's rate higher), losses, ties, and every difference
    (largest gain first)."""

    wins: int
    losses: int
    ties: int
    tasks: tuple[TaskDifference, ...]


def task_wins(a: Iterable[TaskOutcome], b: Iterable[TaskOutcome]) -> TaskWins:
    """Pair the tasks scored on both sides by (mode, domain, task id)."""
    rates_a = {o.task_key: o.success_rate for o in a if o.success_rate is not None}
    found = [
        TaskDifference(
            mode=o.mode,
            domain=o.domain,
            task_id=o.task_id,
            rate_a=rates_a[o.task_key],
            rate_b=o.success_rate,
        )
        for o in b
        if o.success_rate is not None and o.task_key in rates_a
    ]
    found.sort(key=lambda d: (-d.difference, d.mode, d.domain, d.task_id))
    return TaskWins(
        wins=sum(d.difference > 0 for d in found),
        losses=sum(d.difference < 0 for d in found),
        ties=sum(d.difference == 0 for d in found),
        tasks=tuple(found),
    )
