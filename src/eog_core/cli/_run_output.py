"""What ``eog-core run`` prints: the progress line while it runs, the summary after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TextIO

import attrs

from eog_core.cli._common import table
from eog_core.metrics import (
    CorrectedSummary,
    GroupStats,
    corrected_summary,
    read_verdicts,
    runs_from_verdicts,
)
from eog_core.run import ROLLOUTS_FILE, UPSTREAM_DIR, RunProgress, RunReport

__all__ = [
    "outcome_json",
    "print_outcome",
    "progress_line",
    "run_summary",
    "summary_table",
    "ticker",
]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def progress_line(progress: RunProgress) -> str:
    """``[#####.....] 12/40  pass 41.7%  in flight 8  ETA 3m12s`` (done counts resumed ones)."""
    total = progress.total or 1
    done = progress.skipped + progress.done
    filled = int(24 * done / total)
    rate = progress.pass_rate
    passed = "-" if rate is None else f"{100 * rate:.1f}%"
    extra = f"  incomplete {progress.incomplete}" if progress.incomplete else ""
    return (
        f"[{'#' * filled}{'.' * (24 - filled)}] {done}/{progress.total}  pass {passed}  "
        f"in flight {progress.in_flight}{extra}  ETA {_duration(progress.eta_seconds())}"
    )


async def ticker(progress: RunProgress, stream: TextIO) -> None:
    while True:
        stream.write("\r" + progress_line(progress) + "\033[K")
        stream.flush()
        await asyncio.sleep(0.5)


def run_summary(out: Path, repeats: int) -> CorrectedSummary | None:
    path = out / ROLLOUTS_FILE
    if not path.exists():
        return None
    runs = runs_from_verdicts(read_verdicts(path))
    return corrected_summary(runs, k=repeats) if runs else None


def _rows(group: GroupStats) -> list[Any]:
    strict, parity = group.strict, group.parity

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    return [
        group.name,
        group.tasks,
        strict.runs_scored if strict else 0,
        strict.runs_errored if strict else 0,
        pct(strict.task_success_rate if strict else None),
        pct(strict.verifier_pass_rate if strict else None),
        pct(parity.task_success_rate if parity else None),
        pct(parity.verifier_pass_rate if parity else None),
    ]


def summary_table(summary: CorrectedSummary) -> str:
    """Strict pass@1 (avg of k), verifier pass rate, parity beside them: overall and per domain."""
    headers = [
        "domain",
        "tasks",
        "evaluated",
        "incomplete",
        "strict pass@1 %",
        "strict verifier pass %",
        "parity pass@1 %",
        "parity verifier pass %",
    ]
    return table(headers, [_rows(summary.overall), *(_rows(g) for g in summary.by_domain)])


def outcome_json(
    out: Path, repeats: int, report: RunReport | None, interrupted: bool
) -> dict[str, Any]:
    """``--json``: what ran, what could not be evaluated, and the summary of the folder."""
    summary = run_summary(out, repeats)
    return {
        "out": str(out),
        "interrupted": interrupted,
        "planned": report.planned if report else None,
        "ran": report.ran if report else None,
        "skipped": report.skipped if report else None,
        "incomplete": [
            {k: r[k] for k in ("task_id", "repeat", "failure_kind", "failure_reason")}
            for r in report.incomplete
        ]
        if report
        else None,
        "summary": attrs.asdict(summary) if summary else None,
    }


def print_outcome(out: Path, repeats: int, report: RunReport | None) -> None:
    """The summary table, where the outputs are, and what could not be evaluated."""
    if report is not None and report.ran == 0 and report.skipped == report.planned:
        print(
            f"nothing to run: all {report.planned} rollout(s) are already recorded in {out} "
            "(the table is theirs; another --out starts a new run)"
        )
    summary = run_summary(out, repeats)
    if summary is not None:
        print(summary_table(summary))
    if (out / ROLLOUTS_FILE).exists():
        print(f"\nrollouts: {out / ROLLOUTS_FILE}")
    if (out / UPSTREAM_DIR).is_dir():
        print(f"upstream format: {out / UPSTREAM_DIR} (eog-core score {out / UPSTREAM_DIR})")
    if report is not None and report.incomplete:
        print(
            f"{len(report.incomplete)} rollout(s) could not be evaluated; rerun the same "
            "command to retry them:"
        )
        for record in report.incomplete[:10]:
            print(
                f"  {record['task_id']} repeat {record['repeat']}: {record['failure_kind']}: "
                f"{record['failure_reason']}"
            )
