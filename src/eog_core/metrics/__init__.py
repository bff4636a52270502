"""Scores for EOG runs: upstream's numbers as upstream computes them, and corrected ones.

* :func:`read_upstream_results` / :func:`upstream_summary` / :func:`upstream_table`
  (``format_upstream`` adds what upstream could not score) reproduce upstream's
  ``compute_score.py`` printout byte for byte, defects included.
* :func:`read_verdicts` reads our verdict JSONL; :func:`expected_task_ids` the
  task set a run should cover; :func:`read_run` / :func:`locate_run` what a path
  given to ``score``, ``compare`` or ``report`` holds (a run folder is its
  ``rollouts.jsonl``).
* :func:`corrected_summary` / :func:`format_corrected` score either input (or
  both) with errored runs excluded, missing tasks listed, micro and macro
  averages labelled, and unbiased pass@k.
* :func:`compare_runs` pairs two evaluations run by run: McNemar, bootstrap CI,
  TOST equivalence.
* :func:`task_outcomes` / :func:`mean_flip_rate` / :func:`pass_hat_at` /
  :func:`task_bands` / :func:`rate_intervals`: task by task across repeats
  (flips, pass^k, RL bands, Wilson intervals).
* :func:`task_trust` / :func:`trust_summary` / :func:`format_trust`: a run read with
  the tasks' certificates (``eog-core certify``): certified, clean, flagged,
  unchecked, and the score over the clean and the certified tasks.
* :func:`damage_summary` / :func:`format_damage`: collateral-damage rates of rollout
  records with a ``damage`` field (PASS, FAIL_DAMAGE, success while damaging, dollars).
* :class:`RolloutUsage` / :func:`usage_stats` / :class:`Price`: turns, tokens,
  latencies and cost of rollout records; :func:`histogram` for distributions.
"""

from eog_core import _plumbing
from eog_core.metrics._compare import RunComparison, compare_runs, format_comparison
from eog_core.metrics._damage import (
    DamageStats,
    DamageSummary,
    damage_summary,
    format_damage,
    format_damage_comparison,
)
from eog_core.metrics._records import (
    DAMAGE_OUTCOMES,
    DamageOutcome,
    MetricsError,
    PolicyName,
    PolicyOutcome,
    RunRecord,
    TaskKey,
    parse_damage,
)
from eog_core.metrics._results import (
    CorrectedSummary,
    GroupStats,
    MetricsInput,
    PassAtK,
    PolicyStats,
    as_run_records,
    corrected_summary,
    format_corrected,
)
from eog_core.metrics._sources import RunLocation, locate_run, read_run
from eog_core.metrics._stats import mcnemar_exact_p, pass_at_k, pass_hat_k, wilson_interval
from eog_core.metrics._tasks import (
    RateIntervals,
    TaskBand,
    TaskDifference,
    TaskOutcome,
    TaskWins,
    mean_flip_rate,
    pass_hat_at,
    rate_intervals,
    task_bands,
    task_outcomes,
    task_wins,
)
from eog_core.metrics._trust import (
    TRUST_STATUSES,
    CertificateLike,
    TaskTrust,
    TrustGroup,
    TrustStatus,
    TrustSummary,
    format_trust,
    task_digests,
    task_trust,
    trust_summary,
)
from eog_core.metrics._upstream import (
    UpstreamResultFile,
    UpstreamRun,
    read_upstream_results,
    runs_from_upstream,
    upstream_groups,
)
from eog_core.metrics._upstream_table import (
    UpstreamGroup,
    UpstreamSummary,
    format_upstream,
    upstream_summary,
    upstream_table,
)
from eog_core.metrics._usage import (
    Histogram,
    Price,
    RolloutUsage,
    UsageStats,
    histogram,
    rollout_cost,
    usage_stats,
)
from eog_core.metrics._verdicts import (
    VerdictRecord,
    expected_task_ids,
    parse_verdict,
    read_verdicts,
    runs_from_verdicts,
)

__all__ = [
    "DAMAGE_OUTCOMES",
    "TRUST_STATUSES",
    "CertificateLike",
    "CorrectedSummary",
    "DamageOutcome",
    "DamageStats",
    "DamageSummary",
    "GroupStats",
    "Histogram",
    "MetricsError",
    "MetricsInput",
    "PassAtK",
    "PolicyName",
    "PolicyOutcome",
    "PolicyStats",
    "Price",
    "RateIntervals",
    "RolloutUsage",
    "RunComparison",
    "RunLocation",
    "RunRecord",
    "TaskBand",
    "TaskDifference",
    "TaskKey",
    "TaskOutcome",
    "TaskTrust",
    "TaskWins",
    "TrustGroup",
    "TrustStatus",
    "TrustSummary",
    "UpstreamGroup",
    "UpstreamResultFile",
    "UpstreamRun",
    "UpstreamSummary",
    "UsageStats",
    "VerdictRecord",
    "as_run_records",
    "compare_runs",
    "corrected_summary",
    "damage_summary",
    "expected_task_ids",
    "format_comparison",
    "format_corrected",
    "format_damage",
    "format_damage_comparison",
    "format_trust",
    "format_upstream",
    "histogram",
    "locate_run",
    "mcnemar_exact_p",
    "mean_flip_rate",
    "parse_damage",
    "parse_verdict",
    "pass_at_k",
    "pass_hat_at",
    "pass_hat_k",
    "rate_intervals",
    "read_run",
    "read_upstream_results",
    "read_verdicts",
    "rollout_cost",
    "runs_from_upstream",
    "runs_from_verdicts",
    "task_bands",
    "task_digests",
    "task_outcomes",
    "task_trust",
    "task_wins",
    "trust_summary",
    "upstream_groups",
    "upstream_summary",
    "upstream_table",
    "usage_stats",
    "wilson_interval",
]


#: Deprecated names (not exported): ``Comparison`` also named ``eog_core.verify.Comparison``
#: (one value comparison); ``percent`` is plumbing the tables and the report share.
__getattr__ = _plumbing.deprecated_attribute(
    __name__,
    {
        "Comparison": (lambda: RunComparison, "use RunComparison"),
        "percent": (lambda: _plumbing.percent, 'use f"{fraction * 100:.2f}" (internal helper)'),
    },
)
