"""Upstream result files, and upstream's own score exactly as ``compute_score.py`` computes it.

Upstream's harness writes ``<out>/run_<i>/results_<mode>__<domain>__<task_id>.json``.
Its scorer takes a ``--results_folder``, treats every immediate sub-folder as one
row of its table (labelled "Mode", though pointed at one mode's folder the rows
are ``run_1``, ``run_2``...), walks each row's folder for every ``*.json`` and
averages two numbers from each file's ``statistics``:

* "Avg Success Rate" = mean over files of ``overall_success_rate``
  (successful runs / runs, where an errored run counts as a failure);
* "Avg Verifier Pass" = mean over files of ``verifier_level_pass_rate``
  (verifiers passed / checked, pooled over the file's runs; 0 when none ran);
* "Files w/ Errors" = files with a run whose ``error`` is truthy. Contrary to
  upstream's README these files are *not* excluded: they stay in both means.

A task that crashed before any run left no file and is simply not counted.
Files directly in the results folder belong to no row and are ignored, as
upstream ignores them.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.metrics._records import MetricsError, PolicyOutcome, RunRecord, TaskKey
from eog_core.metrics._table import grid_table

__all__ = [
    "UpstreamGroup",
    "UpstreamResultFile",
    "UpstreamRun",
    "UpstreamSummary",
    "format_upstream",
    "read_upstream_results",
    "runs_from_upstream",
    "upstream_summary",
]

_FILE_NAME = re.compile(r"results_(?P<mode>.+?)__(?P<domain>.+?)__(?P<task_id>.+)\.json")
_RUN_FOLDER = re.compile(r"run_(\d+)")
_BANNER = "=" * 100
_RED, _RESET = "\033[91m", "\033[0m"


@attrs.frozen(kw_only=True)
class UpstreamRun:
    """One entry of a result file's ``runs[]``."""

    run_number: int | None
    success: bool
    error: str | None = None
    verifiers_total: int = 0
    verifiers_passed: int = 0
    pass_rate: float | None = None


@attrs.frozen(kw_only=True)
class UpstreamResultFile:
    """One upstream result file. ``error`` is set (and the rest may be empty) when it is unusable.

    ``group`` is the first folder under the folder that was read: the row of
    upstream's table this file lands in. ``run_index`` comes from the nearest
    ``run_<i>`` folder; ``mode``, ``domain`` and ``task_id`` from the file name
    (``None`` when the name is not ``results_<mode>__<domain>__<task_id>.json``:
    upstream still scores such a file, our per-run metrics cannot place it).
    """

    path: str
    group: str | None
    run_index: int | None = None
    mode: str | None = None
    domain: str | None = None
    task_id: str | None = None
    runs: tuple[UpstreamRun, ...] = ()
    overall_success_rate: float = 0.0
    verifier_level_pass_rate: float = 0.0
    error: str | None = None

    @property
    def has_run_error(self) -> bool:
        """Upstream's "file with errors": some run carries an error."""
        return any(run.error for run in self.runs)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} is not a number: {value!r}")
    return float(value)


def _count(mapping: Mapping[str, Any], key: str) -> int:
    value = mapping.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _parse_run(position: int, raw: Any) -> UpstreamRun:
    if not isinstance(raw, Mapping):
        raise ValueError(f"runs[{position}] is not an object")
    error = raw.get("error")
    summary = raw.get("verification_summary")
    summary = summary if isinstance(summary, Mapping) else {}
    run_number = raw.get("run_number")
    rate = summary.get("pass_rate")
    return UpstreamRun(
        run_number=run_number if isinstance(run_number, int) else None,
        success=raw.get("overall_success") is True,
        error=(error if isinstance(error, str) else json.dumps(error)) if error else None,
        verifiers_total=_count(summary, "total"),
        verifiers_passed=_count(summary, "passed"),
        pass_rate=_number(rate, "pass_rate") if rate is not None else None,
    )


def _parse_content(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError("top level is not an object")
    raw_runs = data.get("runs", [])
    if not isinstance(raw_runs, list):
        raise ValueError("runs is not a list")
    statistics = data.get("statistics")
    if not isinstance(statistics, Mapping):
        raise ValueError("no statistics object")
    return {
        "runs": tuple(_parse_run(i, raw) for i, raw in enumerate(raw_runs)),
        "overall_success_rate": _number(
            statistics.get("overall_success_rate"), "statistics.overall_success_rate"
        ),
        "verifier_level_pass_rate": _number(
            statistics.get("verifier_level_pass_rate"), "statistics.verifier_level_pass_rate"
        ),
    }


def _read_one(root: Path, path: Path) -> UpstreamResultFile:
    parts = path.relative_to(root).parts
    run_index = None
    for folder in reversed(parts[:-1]):
        if match := _RUN_FOLDER.fullmatch(folder):
            run_index = int(match.group(1))
            break
    identity: dict[str, Any] = {}
    if name := _FILE_NAME.fullmatch(path.name):
        identity = name.groupdict()
    base = {"path": str(path), "group": parts[0] if len(parts) > 1 else None,
            "run_index": run_index, **identity}
    try:
        content = _parse_content(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        return UpstreamResultFile(**base, error=f"cannot read file: {exc.strerror or exc}")
    except json.JSONDecodeError as exc:
        return UpstreamResultFile(
            **base, error=f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        )
    except ValueError as exc:
        return UpstreamResultFile(**base, error=str(exc))
    return UpstreamResultFile(**base, **content)


def read_upstream_results(path: str | os.PathLike[str]) -> list[UpstreamResultFile]:
    """Read every ``*.json`` under ``path`` (recursively, as upstream does), sorted by path.

    A file that cannot be read or parsed comes back with ``error`` set rather
    than raising, so one broken file does not hide the rest.
    """
    root = Path(path)
    if not root.is_dir():
        raise MetricsError("not a results folder (expected run_<i>/results_*.json under it)", source=str(root))
    return [_read_one(root, file) for file in sorted(root.rglob("*.json")) if file.is_file()]


@attrs.frozen(kw_only=True)
class UpstreamGroup:
    """One row of upstream's table. Rates are fractions (0..1); upstream prints them x100."""

    name: str
    total_files: int
    files_with_errors: int
    avg_success_rate: float
    avg_verifier_pass_rate: float


@attrs.frozen(kw_only=True)
class UpstreamSummary:
    """Upstream's numbers: one row per group, plus what upstream could not have scored.

    ``unreadable`` lists ``(path, reason)`` for files upstream would have crashed on;
    ``outside_groups`` lists files lying directly in the folder read, which
    upstream ignores. ``overall`` pools every grouped file the same way (not a
    row upstream prints).
    """

    groups: tuple[UpstreamGroup, ...]
    overall: UpstreamGroup
    unreadable: tuple[tuple[str, str], ...] = ()
    outside_groups: tuple[str, ...] = ()


def _group(name: str, files: list[UpstreamResultFile]) -> UpstreamGroup:
    count = len(files)
    return UpstreamGroup(
        name=name,
        total_files=count,
        files_with_errors=sum(1 for f in files if f.has_run_error),
        avg_success_rate=sum(f.overall_success_rate for f in files) / count if count else 0.0,
        avg_verifier_pass_rate=(
            sum(f.verifier_level_pass_rate for f in files) / count if count else 0.0
        ),
    )


def upstream_summary(files: Iterable[UpstreamResultFile]) -> UpstreamSummary:
    """Upstream's table from already read files: per group, plain means over files."""
    by_group: dict[str, list[UpstreamResultFile]] = defaultdict(list)
    unreadable: list[tuple[str, str]] = []
    outside: list[str] = []
    for file in files:
        if file.group is None:
            outside.append(file.path)
        elif file.error is not None:
            unreadable.append((file.path, file.error))
        else:
            by_group[file.group].append(file)
    groups = tuple(_group(name, by_group[name]) for name in sorted(by_group))
    everything = [f for name in sorted(by_group) for f in by_group[name]]
    return UpstreamSummary(
        groups=groups,
        overall=_group("(all)", everything),
        unreadable=tuple(unreadable),
        outside_groups=tuple(outside),
    )


def format_upstream(summary: UpstreamSummary, *, color: bool = False) -> str:
    """Upstream's printout; ``print()`` of it writes what ``compute_score.py`` writes.

    Percentages have two decimals. ``color=True`` wraps a non-zero error count in
    the red ANSI code upstream uses. Files upstream would have crashed on or
    ignored are mentioned after the table, only when there are any.
    """
    lines: list[str] = []
    if summary.groups:
        headers = ["Mode", "Total Files", "Files w/ Errors",
                   "Avg Success Rate (%)", "Avg Verifier Pass (%)"]
        rows = []
        for group in summary.groups:
            errors = str(group.files_with_errors)
            if color and group.files_with_errors > 0:
                errors = f"{_RED}{errors}{_RESET}"
            rows.append([group.name, str(group.total_files), errors,
                         f"{group.avg_success_rate * 100.0:.2f}",
                         f"{group.avg_verifier_pass_rate * 100.0:.2f}"])
        lines += ["", _BANNER, "FINAL RESULTS", _BANNER, "", grid_table(headers, rows), ""]
    if summary.unreadable:
        lines.append(f"Unreadable files (upstream would stop here): {len(summary.unreadable)}")
        lines += [f"  {path}: {reason}" for path, reason in summary.unreadable]
    if summary.outside_groups:
        lines.append(f"Files outside any run folder (ignored): {len(summary.outside_groups)}")
        lines += [f"  {path}" for path in summary.outside_groups]
    return "\n".join(lines)


def runs_from_upstream(files: Iterable[UpstreamResultFile]) -> list[RunRecord]:
    """Every run of every usable file as a parity :class:`RunRecord`.

    Upstream's engine is the parity policy. Runs of one task (same mode, domain,
    task id) are numbered 0, 1, ... in the order of their ``run_<i>`` folder,
    then of ``run_number``. An errored run becomes an outcome with
    ``completed=False`` and ``failure_kind="run_error"``. Unusable files are skipped:
    :func:`upstream_summary` reports them.
    """
    by_task: dict[TaskKey, list[tuple[int, int, int, str, UpstreamRun]]] = defaultdict(list)
    for order, file in enumerate(files):
        mode, domain, task_id = file.mode, file.domain, file.task_id
        if file.error is not None or mode is None or domain is None or task_id is None:
            continue
        key = (mode, domain, task_id)
        for position, run in enumerate(file.runs):
            number = run.run_number if run.run_number is not None else position
            by_task[key].append((file.run_index or 0, order, number, file.path, run))
    records: list[RunRecord] = []
    for (mode, domain, task_id), entries in sorted(by_task.items()):
        entries.sort(key=lambda entry: entry[:3])
        for repeat, (_, _, _, path, run) in enumerate(entries):
            rate = run.pass_rate
            if rate is None:
                rate = run.verifiers_passed / run.verifiers_total if run.verifiers_total else 0.0
            outcome = PolicyOutcome(
                success=run.success and run.error is None,
                pass_rate=rate,
                completed=run.error is None,
                failure_kind="run_error" if run.error is not None else None,
            )
            records.append(RunRecord(task_id=task_id, domain=domain, mode=mode,
                                     repeat=repeat, parity=outcome, source=path))
    return records
