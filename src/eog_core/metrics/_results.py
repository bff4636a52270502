"""The corrected summary: what upstream's table should have said.

Differences from upstream's ``compute_score.py`` (see ``_upstream``):

* a run whose evaluation did not complete (agent crash, unreachable gym,
  strict-mode verifier error) is counted apart and left out of every rate,
  instead of scoring 0;
* tasks of the expected set with no result at all are counted and listed,
  instead of silently leaving the denominator;
* every average says what it weights: *run-weighted* (each scored run counts
  once), *task-weighted* (each task counts once: the mean over tasks of its
  success fraction over repeats, which is also the unbiased pass@1), and
  *macro* (the plain mean of the per-domain task-weighted rates, as the paper's
  full-benchmark average);
* pass@k uses the unbiased estimator over the repeats of each task.

A task is (mode, domain, task id): the same id in two modes is scored twice.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

from eog_core._plumbing import percent
from eog_core.errors import UsageError
from eog_core.metrics._grid import grid_table
from eog_core.metrics._records import PolicyName, RunRecord, TaskKey
from eog_core.metrics._stats import pass_at_k
from eog_core.metrics._upstream import UpstreamResultFile, runs_from_upstream
from eog_core.metrics._verdicts import VerdictRecord, runs_from_verdicts

__all__ = [
    "CorrectedSummary",
    "GroupStats",
    "PassAtK",
    "PolicyStats",
    "as_run_records",
    "corrected_summary",
    "format_corrected",
]

MetricsInput = RunRecord | VerdictRecord | UpstreamResultFile
GroupKind = Literal["overall", "domain", "mode"]


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


@attrs.frozen(kw_only=True)
class PassAtK:
    """Unbiased pass@k averaged over the ``tasks`` that have at least ``k`` scored runs."""

    k: int
    value: float | None
    tasks: int


@attrs.frozen(kw_only=True)
class PolicyStats:
    """Rates of one group under one policy; every rate is a fraction, ``None`` when undefined."""

    runs_scored: int
    runs_errored: int
    successes: int
    tasks_scored: int
    tasks_all_errored: int
    run_success_rate: float | None
    task_success_rate: float | None
    macro_success_rate: float | None
    verifier_pass_rate: float | None
    pass_at: tuple[PassAtK, ...]
    errors_by_kind: tuple[tuple[str, int], ...] = ()
    repeat_success_rates: tuple[tuple[int, float], ...] = ()
    """(repeat, success rate over the tasks scored in that repeat), by repeat."""
    repeat_mean: float | None = None
    """Mean of the per-repeat success rates (the mean over k repeats)."""
    repeat_sd: float | None = None
    """Sample standard deviation of the per-repeat success rates (None below 2 repeats)."""


@attrs.frozen(kw_only=True)
class GroupStats:
    """One row: everything (``overall``), one domain, or one mode."""

    kind: GroupKind
    name: str
    tasks: int
    runs: int
    strict: PolicyStats | None
    parity: PolicyStats | None

    def policy(self, policy: PolicyName) -> PolicyStats | None:
        return self.strict if policy == "strict" else self.parity


@attrs.frozen(kw_only=True)
class CorrectedSummary:
    """The corrected numbers; ``missing_tasks`` holds ``(mode, task_id)`` pairs."""

    overall: GroupStats
    by_domain: tuple[GroupStats, ...]
    by_mode: tuple[GroupStats, ...]
    ks: tuple[int, ...]
    expected_tasks: int | None = None
    missing_tasks: tuple[tuple[str, str], ...] = ()
    unexpected_tasks: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()


def as_run_records(
    items: Iterable[MetricsInput],
) -> tuple[list[RunRecord], list[tuple[str, str]]]:
    """Turn any mix of inputs into run records; also return ``(source, reason)`` of what was skipped.

    Upstream files are numbered into repeats together and verdict lines are
    merged per run, so pass all the files of one evaluation in one call.
    """
    runs: list[RunRecord] = []
    verdicts: list[VerdictRecord] = []
    files: list[UpstreamResultFile] = []
    for item in items:
        if isinstance(item, RunRecord):
            runs.append(item)
        elif isinstance(item, VerdictRecord):
            verdicts.append(item)
        else:
            files.append(item)
    skipped = [(f.path, f.error) for f in files if f.error is not None]
    skipped += [
        (f.path, "file name does not say mode, domain and task id")
        for f in files
        if f.error is None and f.task_id is None
    ]
    return runs + runs_from_verdicts(verdicts) + runs_from_upstream(files), skipped


def _policy_stats(
    records: Sequence[RunRecord], policy: PolicyName, ks: Sequence[int]
) -> PolicyStats | None:
    per_task: dict[TaskKey, list[bool]] = defaultdict(list)
    per_repeat: dict[int, list[bool]] = defaultdict(list)
    pass_rates: list[float] = []
    errors: Counter[str] = Counter()
    for record in records:
        outcome = record.outcome(policy)
        if outcome is None:
            continue
        attempts = per_task[record.task_key]
        if outcome.completed:
            attempts.append(outcome.success)
            per_repeat[record.repeat].append(outcome.success)
            pass_rates.append(outcome.pass_rate)
        else:
            errors[outcome.failure_kind or "unknown"] += 1
    if not per_task:
        return None
    scored = {key: attempts for key, attempts in per_task.items() if attempts}
    task_rates = {key: sum(a) / len(a) for key, a in scored.items()}
    by_domain: dict[str, list[float]] = defaultdict(list)
    for (_, domain, _), rate in task_rates.items():
        by_domain[domain].append(rate)
    domain_rates = [r for r in (_mean(rates) for rates in by_domain.values()) if r is not None]
    pass_at = []
    for k in ks:
        values = [pass_at_k(len(a), sum(a), k) for a in scored.values() if len(a) >= k]
        pass_at.append(PassAtK(k=k, value=_mean(values), tasks=len(values)))
    successes = sum(sum(a) for a in scored.values())
    runs_scored = len(pass_rates)
    repeat_rates = tuple((r, sum(v) / len(v)) for r, v in sorted(per_repeat.items()))
    rates_only = [rate for _, rate in repeat_rates]
    repeat_sd = None
    if len(rates_only) >= 2:
        centre = sum(rates_only) / len(rates_only)
        repeat_sd = math.sqrt(sum((x - centre) ** 2 for x in rates_only) / (len(rates_only) - 1))
    return PolicyStats(
        runs_scored=runs_scored,
        runs_errored=sum(errors.values()),
        successes=successes,
        tasks_scored=len(scored),
        tasks_all_errored=len(per_task) - len(scored),
        run_success_rate=successes / runs_scored if runs_scored else None,
        task_success_rate=_mean(list(task_rates.values())),
        macro_success_rate=_mean(domain_rates),
        verifier_pass_rate=_mean(pass_rates),
        pass_at=tuple(pass_at),
        errors_by_kind=tuple(sorted(errors.items())),
        repeat_success_rates=repeat_rates,
        repeat_mean=_mean(rates_only),
        repeat_sd=repeat_sd,
    )


def _group(
    kind: GroupKind, name: str, records: Sequence[RunRecord], ks: Sequence[int]
) -> GroupStats:
    return GroupStats(
        kind=kind,
        name=name,
        tasks=len({r.task_key for r in records}),
        runs=len(records),
        strict=_policy_stats(records, "strict", ks),
        parity=_policy_stats(records, "parity", ks),
    )


def corrected_summary(
    records: Iterable[MetricsInput],
    expected_tasks: Iterable[str] | None = None,
    k: int | None = None,
) -> CorrectedSummary:
    """The corrected summary of run records, verdicts or upstream files (or a mix).

    ``expected_tasks`` (task ids, e.g. from :func:`expected_task_ids`) turns on
    the missing-task count: an expected id with no run in a mode present in the
    data is missing in that mode (in mode ``"?"`` when there is no data at
    all). pass@k is reported for every k from 1 to ``k``, or to the largest
    number of repeats of any task when ``k`` is ``None``.
    """
    runs, skipped = as_run_records(records)
    if k is not None and k < 1:
        raise UsageError(f"k must be at least 1, got {k}")
    repeats = Counter(r.task_key for r in runs)
    top_k = k if k is not None else max(repeats.values(), default=1)
    ks = tuple(range(1, top_k + 1))

    by_domain: dict[str, list[RunRecord]] = defaultdict(list)
    by_mode: dict[str, list[RunRecord]] = defaultdict(list)
    for record in runs:
        by_domain[record.domain].append(record)
        by_mode[record.mode].append(record)

    missing: list[tuple[str, str]] = []
    unexpected: tuple[str, ...] = ()
    expected_count = None
    if expected_tasks is not None:
        expected = frozenset(expected_tasks)
        expected_count = len(expected)
        for mode in sorted(by_mode) or ["?"]:
            seen = {r.task_id for r in by_mode.get(mode, [])}
            missing += [(mode, task_id) for task_id in sorted(expected - seen)]
        unexpected = tuple(sorted({r.task_id for r in runs} - expected))

    return CorrectedSummary(
        overall=_group("overall", "all", runs, ks),
        by_domain=tuple(_group("domain", d, by_domain[d], ks) for d in sorted(by_domain)),
        by_mode=tuple(_group("mode", m, by_mode[m], ks) for m in sorted(by_mode)),
        ks=ks,
        expected_tasks=expected_count,
        missing_tasks=tuple(missing),
        unexpected_tasks=unexpected,
        skipped=tuple(skipped),
    )


def _policy_table(summary: CorrectedSummary, policy: PolicyName) -> str | None:
    groups = [summary.overall, *summary.by_domain, *summary.by_mode]
    if summary.overall.policy(policy) is None:
        return None
    headers = [
        "Group",
        "Tasks",
        "Runs",
        "Errored",
        "Run-wtd (%)",
        "Task-wtd (%)",
        "Macro (%)",
        "Verifier (%)",
        *(f"pass@{k} (%)" for k in summary.ks),
    ]
    rows = []
    for group in groups:
        stats = group.policy(policy)
        if stats is None:
            continue
        label = "all" if group.kind == "overall" else f"{group.kind}={group.name}"
        rows.append(
            [
                label,
                str(stats.tasks_scored),
                str(stats.runs_scored),
                str(stats.runs_errored),
                percent(stats.run_success_rate),
                percent(stats.task_success_rate),
                percent(stats.macro_success_rate),
                percent(stats.verifier_pass_rate),
                *(percent(p.value) for p in stats.pass_at),
            ]
        )
    return grid_table(headers, rows)


def format_corrected(summary: CorrectedSummary) -> str:
    """The corrected summary as text tables, percentages with two decimals."""
    overall = summary.overall
    lines = [
        "CORRECTED RESULTS (errored runs excluded from every rate)",
        f"Tasks with results: {overall.tasks}   Runs: {overall.runs}",
    ]
    legend = [
        "Tasks/Runs: tasks and runs with a scored result; Errored: runs left out.",
        "Success rates: Run-wtd = successes / scored runs; Task-wtd = mean over tasks of",
        "the success fraction over repeats (= pass@1); Macro = mean of the per-domain",
        "Task-wtd rates. Verifier = mean verifier pass rate over scored runs.",
    ]
    if summary.expected_tasks is not None:
        lines.append(
            f"Expected tasks: {summary.expected_tasks}   "
            f"Missing (mode, task): {len(summary.missing_tasks)}   "
            f"Unexpected tasks: {len(summary.unexpected_tasks)}"
        )
    for policy in ("strict", "parity"):
        table = _policy_table(summary, policy)
        if table is None:
            continue
        stats = overall.policy(policy)
        assert stats is not None
        lines += ["", f"Policy: {policy}", table]
        if stats.errors_by_kind:
            kinds = ", ".join(f"{kind}: {count}" for kind, count in stats.errors_by_kind)
            lines.append(f"Errored runs by kind ({policy}): {kinds}")
        if stats.tasks_all_errored:
            lines.append(f"Tasks with every run errored ({policy}): {stats.tasks_all_errored}")
        if stats.repeat_mean is not None:
            spread = (
                f" ± {percent(stats.repeat_sd)} (sample sd)" if stats.repeat_sd is not None else ""
            )
            each = ", ".join(f"#{r}: {percent(rate)}" for r, rate in stats.repeat_success_rates)
            lines.append(
                f"Mean success over {len(stats.repeat_success_rates)} repeat(s) ({policy}): "
                f"{percent(stats.repeat_mean)}{spread}   [{each}]"
            )
        lines.append(
            "pass@k over tasks with at least k scored runs: "
            + ", ".join(f"pass@{p.k} {p.tasks} task(s)" for p in stats.pass_at)
        )
    lines += ["", *legend]
    if summary.missing_tasks:
        lines += ["", "Missing tasks (no result):"]
        lines += [f"  {mode}: {task_id}" for mode, task_id in summary.missing_tasks]
    if summary.unexpected_tasks:
        lines += ["", "Tasks not in the expected set:"]
        lines += [f"  {task_id}" for task_id in summary.unexpected_tasks]
    if summary.skipped:
        lines += ["", "Skipped inputs:"]
        lines += [f"  {source}: {reason}" for source, reason in summary.skipped]
    return "\n".join(lines)
