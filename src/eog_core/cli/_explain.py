"""Clear refusals for ``score`` and ``compare``: what was read, and why nothing could be used."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eog_core.metrics import MetricsError, RunComparison

__all__ = ["check_overlap", "explain_nothing_scored"]

_LISTED = 20  # files named one by one before a count of the rest


def explain_nothing_scored(
    paths: Sequence[Path], skipped: Sequence[tuple[str, str]]
) -> MetricsError:
    """The error for inputs without one scored run: every file left out, and why."""
    where = ", ".join(map(str, paths))
    if not skipped:
        return MetricsError(
            "no scored runs found (expected run_<i>/results_*.json files or verdict lines)",
            source=where,
        )
    lines = [f"{path}: {reason}" for path, reason in skipped[:_LISTED]]
    if len(skipped) > _LISTED:
        lines.append(f"... and {len(skipped) - _LISTED} more")
    return MetricsError(
        f"no scored runs found: all {len(skipped)} result file(s) were left out:\n  "
        + "\n  ".join(lines),
        source=where,
    )


def check_overlap(comparison: RunComparison, a: Path, b: Path) -> None:
    """Refuse a comparison without one usable pair, saying why (no run in common, or all errored)."""
    common = comparison.pairs + comparison.pairs_errored + comparison.pairs_without_policy
    if common == 0:
        raise MetricsError(
            f"no run in common between {a} and {b} (runs pair by mode, domain, task id and repeat): "
            f"{len(comparison.tasks_only_in_a)} task(s) only in A, {len(comparison.tasks_only_in_b)} "
            "only in B",
            source=f"{a}, {b}",
        )
    if comparison.pairs == 0:
        raise MetricsError(
            f"no pair could be compared: {comparison.pairs_errored} paired run(s) did not complete "
            f"and {comparison.pairs_without_policy} lack the chosen policy",
            source=f"{a}, {b}",
        )
