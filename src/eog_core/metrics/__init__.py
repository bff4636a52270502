"""Scores for EOG runs: upstream's numbers as upstream computes them, and corrected ones.

* :func:`read_upstream_results` / :func:`upstream_summary` / :func:`upstream_table`
  (``format_upstream`` adds what upstream could not score) reproduce upstream's
  ``compute_score.py`` printout byte for byte, defects included.
* :func:`read_verdicts` reads our verdict JSONL; :func:`expected_task_ids` the
  task set a run should cover.
* :func:`corrected_summary` / :func:`format_corrected` score either input (or
  both) with errored runs excluded, missing tasks listed, micro and macro
  averages labelled, and unbiased pass@k.
* :func:`compare_runs` pairs two evaluations run by run: McNemar, bootstrap CI,
  TOST equivalence.
"""

from eog_core.metrics._compare import Comparison, compare_runs, format_comparison
from eog_core.metrics._records import MetricsError, PolicyName, PolicyOutcome, RunRecord, TaskKey
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
from eog_core.metrics._stats import mcnemar_exact_p, pass_at_k
from eog_core.metrics._upstream import (
    UpstreamGroup,
    UpstreamResultFile,
    UpstreamRun,
    UpstreamSummary,
    format_upstream,
    read_upstream_results,
    runs_from_upstream,
    upstream_groups,
    upstream_summary,
    upstream_table,
)
from eog_core.metrics._verdicts import (
    VerdictRecord,
    expected_task_ids,
    read_verdicts,
    runs_from_verdicts,
)

__all__ = [
    "Comparison",
    "CorrectedSummary",
    "GroupStats",
    "MetricsError",
    "MetricsInput",
    "PassAtK",
    "PolicyName",
    "PolicyOutcome",
    "PolicyStats",
    "RunRecord",
    "TaskKey",
    "UpstreamGroup",
    "UpstreamResultFile",
    "UpstreamRun",
    "UpstreamSummary",
    "VerdictRecord",
    "as_run_records",
    "compare_runs",
    "corrected_summary",
    "expected_task_ids",
    "format_comparison",
    "format_corrected",
    "format_upstream",
    "mcnemar_exact_p",
    "pass_at_k",
    "read_upstream_results",
    "read_verdicts",
    "runs_from_upstream",
    "runs_from_verdicts",
    "upstream_groups",
    "upstream_summary",
    "upstream_table",
]
