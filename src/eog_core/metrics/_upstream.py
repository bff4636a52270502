"""Upstream result files read as upstream reads them, and their runs as parity records.

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

The score and table made from these files live in ``_upstream_table.py``.
"""

from __future__ import annotations

import json
import locale
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.metrics._records import MetricsError, PolicyOutcome, RunRecord, TaskKey

__all__ = [
    "UpstreamResultFile",
    "UpstreamRun",
    "read_upstream_results",
    "runs_from_upstream",
    "upstream_groups",
]

_FILE_NAME = re.compile(r"results_(?P<mode>.+?)__(?P<domain>.+?)__(?P<task_id>.+)\.json")
#: evaluate.py run on a local folder of task files names its results ``results_<file stem>.json``.
_LOCAL_NAME = re.compile(r"results_(?P<task_id>.+)\.json")
LOCAL_MODE, UNKNOWN_DOMAIN = "local", "unknown"
_RUN_FOLDER = re.compile(r"run_(\d+)")
_RATES = ("overall_success_rate", "verifier_level_pass_rate")


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
    """One upstream result file. ``error`` is set (and the rest may be empty) when upstream's
    ``compute_score.py`` would fail on it.

    ``group`` is the first folder under the folder that was read: the row of
    upstream's table this file lands in. ``run_index`` comes from the nearest
    ``run_<i>`` folder; ``mode``, ``domain`` and ``task_id`` from the file name
    (``results_<mode>__<domain>__<task_id>.json``, or ``results_<task_id>.json``
    as evaluate.py names results of a local folder: mode ``"local"``, domain
    ``"unknown"``; ``None`` for other names: upstream still scores such a file,
    our per-run metrics cannot place it). ``rates`` are the two statistics as
    the file holds them (upstream sums them as they are: booleans, NaN and
    integers included); ``has_run_error`` is upstream's reading (``any()`` over
    the runs, stopping at the first run with an error).
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
    rates: tuple[Any, Any] = attrs.field(default=(0.0, 0.0), eq=False, repr=False)
    has_run_error: bool = False
    error: str | None = None


def _count(mapping: Mapping[str, Any], key: str) -> int:
    value = mapping.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _parse_run(raw: Any) -> UpstreamRun | None:
    """A run for our per-run metrics (None: not an object, upstream never reads it as one)."""
    if not isinstance(raw, Mapping):
        return None
    error = raw.get("error")
    summary = raw.get("verification_summary")
    summary = summary if isinstance(summary, Mapping) else {}
    run_number = raw.get("run_number")
    return UpstreamRun(
        run_number=run_number
        if isinstance(run_number, int) and not isinstance(run_number, bool)
        else None,
        success=raw.get("overall_success") is True,
        error=(error if isinstance(error, str) else json.dumps(error, default=str))
        if error
        else None,
        verifiers_total=_count(summary, "total"),
        verifiers_passed=_count(summary, "passed"),
        pass_rate=_finite(summary.get("pass_rate")),
    )


def _any_run_error(runs: Any) -> bool:
    """``any(run.get("error") for run in runs)`` as upstream evaluates it, or ValueError where it fails."""
    if isinstance(runs, Mapping | str):
        if runs:
            raise ValueError(
                f"runs is {'an object' if isinstance(runs, Mapping) else 'a string'}: "
                "upstream iterates it and fails"
            )
        return False
    if not isinstance(runs, list):
        raise ValueError(f"runs is {json.dumps(runs)[:40]}: upstream cannot iterate it")
    for position, run in enumerate(runs):
        if not isinstance(run, Mapping):
            raise ValueError(f"runs[{position}] is not an object: upstream fails on it")
        if run.get("error"):
            return True
    return False


def _rate(statistics: Any, key: str) -> Any:
    if not isinstance(statistics, Mapping):
        raise ValueError("no statistics object: upstream fails on it")
    if key not in statistics:
        raise ValueError(f"statistics.{key} is missing: upstream fails on it")
    value = statistics[key]
    if isinstance(value, int | float):  # booleans too: sum() adds them
        return value
    raise ValueError(
        f"statistics.{key} is not a number ({json.dumps(value)[:40]}): upstream fails summing it"
    )


def _parse_content(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError("top level is not an object")
    raw_runs = data.get("runs", [])
    has_error = _any_run_error(raw_runs)
    statistics = data.get("statistics")
    rates = (_rate(statistics, _RATES[0]), _rate(statistics, _RATES[1]))
    runs = raw_runs if isinstance(raw_runs, list) else []
    return {
        "runs": tuple(run for run in map(_parse_run, runs) if run is not None),
        "overall_success_rate": _finite(rates[0]) or 0.0,
        "verifier_level_pass_rate": _finite(rates[1]) or 0.0,
        "rates": rates,
        "has_run_error": has_error,
    }


def _identity(name: str) -> dict[str, Any]:
    if match := _FILE_NAME.fullmatch(name):
        return match.groupdict()
    if match := _LOCAL_NAME.fullmatch(name):
        return {"mode": LOCAL_MODE, "domain": UNKNOWN_DOMAIN, "task_id": match.group("task_id")}
    return {}


def _read_one(root: Path, path: Path) -> UpstreamResultFile:
    parts = path.relative_to(root).parts
    run_index = None
    for folder in reversed(parts[:-1]):
        if match := _RUN_FOLDER.fullmatch(folder):
            run_index = int(match.group(1))
            break
    base = {
        "path": str(path),
        "group": parts[0] if len(parts) > 1 else None,
        "run_index": run_index,
        **_identity(path.name),
    }
    try:  # read as upstream reads it: text in the locale's encoding, then json.loads
        with path.open(encoding=locale.getpreferredencoding(False)) as handle:
            text = handle.read()
        content = _parse_content(json.loads(text))
    except OSError as exc:
        return UpstreamResultFile(**base, error=f"cannot read file: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        return UpstreamResultFile(
            **base, error=f"cannot decode file: {exc.reason} at byte {exc.start}"
        )
    except json.JSONDecodeError as exc:
        return UpstreamResultFile(
            **base, error=f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        )
    except RecursionError:
        return UpstreamResultFile(**base, error="JSON nested too deep")
    except ValueError as exc:
        return UpstreamResultFile(**base, error=str(exc))
    return UpstreamResultFile(**base, **content)


def upstream_groups(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The rows of upstream's table for a results folder: its sub-folders, sorted (empty ones too)."""
    root = Path(path)
    return tuple(sorted(name for name in os.listdir(root) if (root / name).is_dir()))


def read_upstream_results(path: str | os.PathLike[str]) -> list[UpstreamResultFile]:
    """Read every ``*.json`` under ``path`` in upstream's order.

    Row folders sorted by name, files within one in ``os.walk`` order (which
    the sums depend on), then files lying directly in ``path`` (upstream
    ignores them). A file upstream cannot score comes back with ``error`` set
    rather than raising, so one broken file does not hide the rest.
    """
    root = Path(path)
    if not root.is_dir():
        raise MetricsError(
            "not a results folder (expected run_<i>/results_*.json under it)", source=str(root)
        )
    found: list[UpstreamResultFile] = []
    for group in upstream_groups(root):
        for folder, _, names in os.walk(root / group):
            found += [
                _read_one(root, Path(folder) / name) for name in names if name.endswith(".json")
            ]
    found += [
        _read_one(root, root / name)
        for name in sorted(os.listdir(root))
        if name.endswith(".json") and not (root / name).is_dir()
    ]
    return found


def runs_from_upstream(files: Iterable[UpstreamResultFile]) -> list[RunRecord]:
    """Every run of every usable file as a parity :class:`RunRecord`.

    Upstream's engine is the parity policy. Runs of one task (same mode, domain,
    task id) are numbered 0, 1, ... in the order of their ``run_<i>`` folder,
    then of ``run_number``. An errored run becomes an outcome with
    ``completed=False`` and ``failure_kind="run_error"``. Unusable files are skipped:
    :func:`upstream_summary` reports them.
    """
    by_task: dict[TaskKey, list[tuple[int, int, int, str, int, UpstreamRun]]] = defaultdict(list)
    for order, file in enumerate(files):
        mode, domain, task_id = file.mode, file.domain, file.task_id
        if file.error is not None or mode is None or domain is None or task_id is None:
            continue
        key = (mode, domain, task_id)
        for position, run in enumerate(file.runs):
            number = run.run_number if run.run_number is not None else position
            by_task[key].append((file.run_index or 0, order, number, file.path, position, run))
    records: list[RunRecord] = []
    for (mode, domain, task_id), entries in sorted(by_task.items()):
        entries.sort(key=lambda entry: entry[:3])
        for repeat, (_, _, _, path, position, run) in enumerate(entries):
            rate = run.pass_rate
            if rate is None:
                rate = run.verifiers_passed / run.verifiers_total if run.verifiers_total else 0.0
            outcome = PolicyOutcome(
                success=run.success and run.error is None,
                pass_rate=rate,
                completed=run.error is None,
                failure_kind="run_error" if run.error is not None else None,
            )
            records.append(
                RunRecord(
                    task_id=task_id,
                    domain=domain,
                    mode=mode,
                    repeat=repeat,
                    parity=outcome,
                    source=path,
                    source_index=position,
                )
            )
    return records
