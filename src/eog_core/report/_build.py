"""The report's content: every number taken from :mod:`eog_core.metrics`, arranged per run.

Nothing here computes a rate: summaries come from :func:`corrected_summary`,
intervals from :func:`rate_intervals`, task outcomes and flips from
:func:`task_outcomes`, pass^k from :func:`pass_hat_at`, bands from
:func:`task_bands`, comparisons from :func:`compare_runs` / :func:`task_wins`,
tokens and cost from :func:`usage_stats`, damage rates from :func:`damage_summary`. This module only groups rollouts and
chooses what to show.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.metrics import (
    CertificateLike,
    CorrectedSummary,
    DamageSummary,
    PassAtK,
    PolicyName,
    Price,
    RateIntervals,
    RolloutUsage,
    RunComparison,
    RunRecord,
    TaskBand,
    TaskOutcome,
    TaskTrust,
    TaskWins,
    TrustSummary,
    UsageStats,
    as_run_records,
    compare_runs,
    corrected_summary,
    damage_summary,
    mean_flip_rate,
    pass_hat_at,
    rate_intervals,
    rollout_cost,
    task_bands,
    task_outcomes,
    task_trust,
    task_wins,
    trust_summary,
    usage_stats,
)
from eog_core.report._load import ROLLOUTS_FILE, RunSource
from eog_core.report._transcript import rollout_detail, rollout_row, well_formed
from eog_core.report._upstream import UpstreamFiles

__all__ = [
    "BANDS_FORMAT",
    "ComparisonView",
    "PolicyView",
    "ReportContent",
    "RunView",
    "bands_document",
    "bands_json",
    "build_content",
]

POLICIES: tuple[PolicyName, ...] = ("strict", "parity")
TaskKey = tuple[str, str, str]
log = logging.getLogger("eog_core.report")


@attrs.frozen(kw_only=True)
class PolicyView:
    """One run under one policy: intervals per group, pass^k, flips, bands, task outcomes."""

    policy: PolicyName
    intervals: Mapping[str, RateIntervals]
    """By group label: ``all``, then each domain."""
    pass_hat: tuple[PassAtK, ...]
    flip_rate: float | None
    outcomes: tuple[TaskOutcome, ...]
    bands: tuple[TaskBand, ...]


@attrs.frozen(kw_only=True)
class RunView:
    index: int
    source: RunSource
    summary: CorrectedSummary
    policies: Mapping[PolicyName, PolicyView]
    usage: UsageStats
    task_usage: Mapping[TaskKey, UsageStats]
    priced: bool
    usages: tuple[RolloutUsage, ...] = attrs.field(default=(), repr=False)
    """Each record's effort, in the order of ``source.records``."""
    name: str = ""
    """The run's name in deep links (its folder's or file's name, unique in the report)."""
    damage: DamageSummary | None = None
    """Collateral-damage rates; ``None`` when no record of the run has a ``damage`` field."""
    trust: TrustSummary | None = None
    """The run split by its tasks' certificates; ``None`` without certificates."""

    def domain(self, name: str) -> Any:
        """The summary group of domain ``name``, or None when the run has no task in it."""
        return next((g for g in self.summary.by_domain if g.name == name), None)


@attrs.frozen(kw_only=True)
class ComparisonView:
    """Run ``b`` against the first run (``a``) under one policy."""

    a: int
    b: int
    policy: PolicyName
    comparison: RunComparison
    wins: TaskWins


@attrs.frozen(kw_only=True)
class ReportContent:
    title: str
    runs: tuple[RunView, ...]
    comparisons: tuple[ComparisonView, ...]
    rows: list[dict[str, Any]]
    details: list[dict[str, Any] | None]
    tasks: list[dict[str, Any]]
    prices: tuple[Price, ...]
    tasks_given: bool = False
    """Whether task files were given (``--tasks``) to show prompts from."""
    without_prompts: int = 0
    """Rollouts whose transcript has no prompt (the records do not hold them)."""
    trust: Mapping[str, TaskTrust] | None = None
    """Each task id's trust from its certificate; ``None`` without certificates."""
    replay: Mapping[str, Any] | None = None
    """An ``eog-core replay`` result (``replay.json``), shown as the run's reproducibility."""

    @property
    def damage_shown(self) -> bool:
        """Whether any run has damage verdicts (the page shows damage columns only then)."""
        return any(run.damage is not None for run in self.runs)


def _policy_view(
    runs: Sequence[RunRecord], summary: CorrectedSummary, policy: PolicyName
) -> PolicyView | None:
    overall = summary.overall.policy(policy)
    if overall is None:
        return None
    intervals = {"all": rate_intervals(overall)}
    for group in summary.by_domain:
        stats = group.policy(policy)
        if stats is not None:
            intervals[group.name] = rate_intervals(stats)
    outcomes = task_outcomes(runs, policy)
    return PolicyView(
        policy=policy,
        intervals=intervals,
        pass_hat=pass_hat_at(outcomes, summary.ks),
        flip_rate=mean_flip_rate(outcomes),
        outcomes=outcomes,
        bands=task_bands(outcomes),
    )


def _record_key(record: Mapping[str, Any]) -> TaskKey:
    return (str(record.get("mode")), str(record.get("domain")), str(record.get("task_id")))


def _rollout_order(record: Mapping[str, Any]) -> tuple[str, str, str, int]:
    repeat = record.get("repeat")
    return (*_record_key(record), repeat if isinstance(repeat, int) else -1)


def _run_names(sources: Sequence[RunSource]) -> list[str]:
    """Each run's folder (or file, or upstream folder) name, made unique with ``-2``, ``-3``..."""
    names: list[str] = []
    for source in sources:
        path = Path(source.path)
        name = path.parent.name if path.name == ROLLOUTS_FILE else path.stem or path.name
        name = well_formed(name or source.label or "run")
        unique, number = name, 1
        while unique in names:
            number += 1
            unique = f"{name}-{number}"
        names.append(unique)
    return names


def _run_view(
    index: int,
    source: RunSource,
    prices: Mapping[str, Price],
    name: str = "",
    trust: Mapping[str, TaskTrust] | None = None,
) -> RunView:
    runs, _ = as_run_records(source.inputs)  # once: every metric below takes the run records
    summary = corrected_summary(runs)
    policies = {p: view for p in POLICIES if (view := _policy_view(runs, summary, p)) is not None}
    usages = [RolloutUsage.from_record(r) for r in source.records]
    by_task: dict[TaskKey, list[RolloutUsage]] = defaultdict(list)
    for record, usage in zip(source.records, usages, strict=True):
        by_task[_record_key(record)].append(usage)
    return RunView(
        index=index,
        source=source,
        summary=summary,
        policies=policies,
        usage=usage_stats(usages, prices),
        task_usage={key: usage_stats(u, prices) for key, u in by_task.items()},
        priced=bool(usages) and all(u.model in prices for u in usages),
        usages=tuple(usages),
        name=name,
        damage=damage_summary(runs),
        trust=trust_summary(runs, trust) if trust is not None else None,
    )


def _task_rows(run: RunView) -> list[dict[str, Any]]:
    outcomes = {p: {o.task_key: o for o in view.outcomes} for p, view in run.policies.items()}
    keys = sorted({key for by_key in outcomes.values() for key in by_key})
    rows = []
    for key in keys:
        usage = run.task_usage.get(key)
        row: dict[str, Any] = {
            "run": run.index,
            "mode": key[0],
            "domain": key[1],
            "task_id": key[2],
        }
        for policy, by_key in outcomes.items():
            outcome = by_key.get(key)
            if outcome is not None:
                row[policy] = {
                    "outcomes": list(outcome.outcomes),
                    "rate": outcome.success_rate,
                    "flip": outcome.flip_rate,
                    "scored": outcome.scored,
                    "errored": outcome.errored,
                }
        if usage is not None:
            row |= {
                "turns": usage.mean_turns,
                "calls": usage.mean_tool_calls,
                "tokens": usage.mean_tokens,
                "cost": usage.cost,
            }
        rows.append(row)
    return rows


def _rollouts(
    run: RunView,
    prices: Mapping[str, Price],
    tasks: Mapping[str, Any],
    rows: list[dict[str, Any]],
    details: list[dict[str, Any] | None],
) -> int:
    """Append the run's rows and details; return how many of its rollouts show no prompt."""
    without = 0
    if run.source.records:
        order = sorted(
            range(len(run.source.records)), key=lambda i: _rollout_order(run.source.records[i])
        )
        for index in order:
            record, usage = run.source.records[index], run.usages[index]
            cost = (
                rollout_cost(usage, prices[usage.model])
                if usage.model is not None and usage.model in prices
                else None
            )
            rows.append(rollout_row(run.index, record, usage, cost, run_name=run.name))
            detail = rollout_detail(record, tasks.get(str(record.get("task_id"))))
            without += not (detail["system_prompt"] or detail["user_prompt"])
            details.append(detail)
        return without
    scored, _ = as_run_records(run.source.inputs)
    files = UpstreamFiles()
    for run_record in scored:
        primary = run_record.primary
        row = rollout_row(
            run.index,
            {
                "task_id": run_record.task_id,
                "domain": run_record.domain,
                "mode": run_record.mode,
                "repeat": run_record.repeat,
                "status": "evaluated"
                if primary is not None and primary.completed
                else "incomplete",
            },
            None,
            None,
            run_name=run.name,
        )
        for policy in POLICIES:
            outcome = run_record.outcome(policy)
            row[policy] = None if outcome is None or not outcome.completed else outcome.success
            if outcome is not None and not outcome.completed:
                row["failure_kind"] = outcome.failure_kind
        rows.append(row)
        details.append(files.detail(run_record))
    return 0  # upstream's files hold the prompts


def build_content(
    sources: Sequence[RunSource],
    *,
    title: str,
    prices: Sequence[Price] = (),
    tasks: Mapping[str, Any] | None = None,
    n_boot: int = 10000,
    seed: int = 0,
    certificates: Mapping[str, CertificateLike] | None = None,
    task_digests: Mapping[str, str] | None = None,
    replay: Mapping[str, Any] | None = None,
) -> ReportContent:
    """Everything the page shows; comparisons pair every later run with the first one.

    With ``certificates`` (task id -> certificate) every task is marked by its trust, a
    certificate whose ``task_sha256`` differs from ``task_digests`` being stale."""
    by_model = {price.model: price for price in prices}
    names = _run_names(sources)
    trust = _trust(sources, certificates, task_digests)
    runs = tuple(
        _run_view(i, source, by_model, names[i], trust) for i, source in enumerate(sources)
    )
    comparisons = []
    for run in runs[1:]:
        for policy in POLICIES:
            if policy in runs[0].policies and policy in run.policies:
                comparison = compare_runs(
                    runs[0].source.inputs,
                    run.source.inputs,
                    policy=policy,
                    n_boot=n_boot,
                    seed=seed,
                )
                wins = task_wins(runs[0].policies[policy].outcomes, run.policies[policy].outcomes)
                comparisons.append(
                    ComparisonView(
                        a=0, b=run.index, policy=policy, comparison=comparison, wins=wins
                    )
                )
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any] | None] = []
    without_prompts = sum(_rollouts(run, by_model, tasks or {}, rows, details) for run in runs)
    _say_where_prompts_are(tasks is not None, without_prompts, len(details))
    return ReportContent(
        title=title,
        runs=runs,
        comparisons=tuple(comparisons),
        rows=rows,
        details=details,
        tasks=[row for run in runs for row in _task_rows(run)],
        prices=tuple(prices),
        tasks_given=tasks is not None,
        without_prompts=without_prompts,
        trust=trust,
        replay=replay,
    )


def _trust(
    sources: Sequence[RunSource],
    certificates: Mapping[str, CertificateLike] | None,
    digests: Mapping[str, str] | None,
) -> dict[str, TaskTrust] | None:
    if certificates is None:
        return None
    ids = {r.task_id for s in sources for r in as_run_records(s.inputs)[0]}
    return task_trust(ids, certificates, digests)


def _say_where_prompts_are(tasks_given: bool, without: int, rollouts: int) -> None:
    if not without:
        return
    if tasks_given:
        log.warning(
            "%d of %d rollouts show no prompts: their task ids are not in --tasks",
            without,
            rollouts,
        )
    else:
        log.warning(
            "the page shows no prompts (the records do not hold them): give --tasks PATH, "
            "the run's task files"
        )


BANDS_FORMAT = "eog_core.task_bands/1"


def bands_document(content: ReportContent) -> dict[str, Any]:
    """The RL task bands of every run and policy as one JSON document (``--bands-json``)."""
    runs = []
    for run in content.runs:
        policies = {}
        for policy, view in run.policies.items():
            policies[policy] = {
                "flip_rate": view.flip_rate,
                "bands": [
                    {
                        "name": band.name,
                        "low": band.low,
                        "high": band.high,
                        "tasks": [
                            {
                                "mode": t.mode,
                                "domain": t.domain,
                                "task_id": t.task_id,
                                "successes": t.successes,
                                "scored": t.scored,
                                "errored": t.errored,
                                "success_rate": t.success_rate,
                                "outcomes": list(t.outcomes),
                            }
                            for t in band.tasks
                        ],
                    }
                    for band in view.bands
                ],
            }
        runs.append({"run": run.source.label, "path": run.source.path, "policies": policies})
    return {"format": BANDS_FORMAT, "runs": runs}


def bands_json(content: ReportContent) -> bytes:
    """:func:`bands_document` as the UTF-8 bytes of ``--bands-json``; a lone surrogate (a task id
    UTF-8 cannot hold) is written as its JSON escape, ``\\ud800``, which reads back as itself."""
    text = json.dumps(bands_document(content), indent=2, ensure_ascii=False) + "\n"
    return text.encode("utf-8", "backslashreplace")
