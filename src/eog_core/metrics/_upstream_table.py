"""Upstream's own score from read result files, and the table ``compute_score.py`` prints.

:func:`upstream_summary` groups the files :mod:`eog_core.metrics._upstream` read into
upstream's rows (plain means over files, errored files kept in both means);
:func:`upstream_table` and :func:`format_upstream` print them as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from eog_core.metrics._grid import tabulate_grid
from eog_core.metrics._records import MetricsError
from eog_core.metrics._upstream import _RATES, UpstreamResultFile, _finite

__all__ = [
    "UpstreamGroup",
    "UpstreamSummary",
    "format_upstream",
    "upstream_summary",
    "upstream_table",
]

_BANNER = "=" * 100
_RED, _RESET = "\033[91m", "\033[0m"


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
    upstream ignores. ``overall`` pools every grouped file the same way, in
    path order (not a row upstream prints).
    """

    groups: tuple[UpstreamGroup, ...]
    overall: UpstreamGroup
    unreadable: tuple[tuple[str, str], ...] = ()
    outside_groups: tuple[str, ...] = ()


def _mean(files: list[UpstreamResultFile], which: int) -> float:
    """Upstream's ``sum(rates) / len(rates)``: the file's values as they are, in reading order."""
    if not files:
        return 0
    try:
        return sum(f.rates[which] for f in files) / len(files)  # type: ignore[no-any-return]
    except OverflowError:
        culprit = next(
            (
                f
                for f in files
                if _finite(f.rates[which]) is None and isinstance(f.rates[which], int)
            ),
            files[0],
        )
        raise MetricsError(
            f"statistics.{_RATES[which]} is too large to average (upstream's "
            "compute_score.py fails with OverflowError)",
            source=culprit.path,
        ) from None


def _group(name: str, files: list[UpstreamResultFile]) -> UpstreamGroup:
    return UpstreamGroup(
        name=name,
        total_files=len(files),
        files_with_errors=sum(1 for f in files if f.has_run_error),
        avg_success_rate=_mean(files, 0),
        avg_verifier_pass_rate=_mean(files, 1),
    )


def upstream_summary(
    files: Iterable[UpstreamResultFile], groups: Iterable[str] = ()
) -> UpstreamSummary:
    """Upstream's table from already read files: per group, plain means over files.

    ``groups`` adds rows for folders holding no result file (upstream prints
    them with zeros); :func:`upstream_groups` lists a results folder's.
    Raises :class:`MetricsError` naming the file when a rate is an integer
    too large to average.
    """
    by_group: dict[str, list[UpstreamResultFile]] = {name: [] for name in groups}
    unreadable: list[tuple[str, str]] = []
    outside: list[str] = []
    for file in files:
        if file.group is None:
            outside.append(file.path)
        elif file.error is not None:
            by_group.setdefault(file.group, [])
            unreadable.append((file.path, file.error))
        else:
            by_group.setdefault(file.group, []).append(file)
    names = sorted(by_group)
    everything = sorted((f for name in names for f in by_group[name]), key=lambda f: f.path)
    return UpstreamSummary(
        groups=tuple(_group(name, by_group[name]) for name in names),
        overall=_group("(all)", everything),
        unreadable=tuple(unreadable),
        outside_groups=tuple(outside),
    )


def upstream_table(summary: UpstreamSummary, *, color: bool = False) -> str:
    """Exactly what ``compute_score.py`` prints to stdout (trailing newline included).

    Empty when there is no row (upstream then prints nothing). ``color=True``
    keeps the red ANSI code upstream puts around a non-zero error count; without
    it the codes are taken out of the same layout (tabulate lays a table out
    differently once it holds codes, e.g. it keeps ``1,000`` as printed).
    """
    if not summary.groups:
        return ""
    headers = [
        "Mode",
        "Total Files",
        "Files w/ Errors",
        "Avg Success Rate (%)",
        "Avg Verifier Pass (%)",
    ]
    rows: list[list[str | int]] = []
    for group in summary.groups:
        errors = str(group.files_with_errors)
        if group.files_with_errors > 0:
            errors = f"{_RED}{errors}{_RESET}"
        rows.append(
            [
                group.name,
                group.total_files,
                errors if group.files_with_errors > 0 else "0",
                f"{group.avg_success_rate * 100.0:.2f}",
                f"{group.avg_verifier_pass_rate * 100.0:.2f}",
            ]
        )
    table = tabulate_grid(headers, rows)
    if not color:
        table = table.replace(_RED, "").replace(_RESET, "")
    return "\n".join(["", _BANNER, "FINAL RESULTS", _BANNER, "", table, "", ""])


def format_upstream(summary: UpstreamSummary, *, color: bool = False) -> str:
    """Upstream's printout; ``print()`` of it writes what ``compute_score.py`` writes.

    ``color=True`` wraps a non-zero error count in the red ANSI code upstream
    uses. Files upstream would have crashed on or ignored are mentioned after
    the table, only when there are any.
    """
    lines: list[str] = []
    if summary.groups:
        lines.append(upstream_table(summary, color=color)[:-1])
    if summary.unreadable:
        lines.append(f"Unreadable files (upstream would stop here): {len(summary.unreadable)}")
        lines += [f"  {path}: {reason}" for path, reason in summary.unreadable]
    if summary.outside_groups:
        lines.append(f"Files outside any run folder (ignored): {len(summary.outside_groups)}")
        lines += [f"  {path}" for path in summary.outside_groups]
    return "\n".join(lines)
