"""Reading one run for the report: a ``rollouts.jsonl`` (or its folder) or an upstream result folder.

A rollout record is read once: the same decoded object gives the metrics their
verdict (:func:`eog_core.metrics.parse_verdict`) and the transcript viewer its
turns. Unknown keys are ignored and ``stop_reason`` / ``failure_kind`` are open
strings, so records written by newer versions still load. An upstream folder
(``run_<i>/results_*.json``) gives its files to the metrics; the transcripts are read
from the files later (``_upstream``), a file at a time. What a path holds, and how its
lines are read, is decided once for ``score``, ``compare`` and the report
(:func:`eog_core.metrics.locate_run`, ``eog_core._jsonl``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core._jsonl import JsonLineError, jsonl_values, loads_line
from eog_core.metrics import (
    MetricsError,
    MetricsInput,
    VerdictRecord,
    locate_run,
    parse_verdict,
    read_upstream_results,
)
from eog_core.report._fastjson import fast_loads, may_hold_big_integer

__all__ = ["ROLLOUTS_FILE", "RunSource", "load_run"]

ROLLOUTS_FILE = "rollouts.jsonl"


@attrs.frozen(kw_only=True)
class RunSource:
    """One run as the report sees it: the metrics' inputs and, for rollout files, the records."""

    label: str
    path: str
    kind: str
    """``rollouts`` or ``upstream``."""
    inputs: tuple[MetricsInput, ...] = attrs.field(repr=False)
    records: tuple[Mapping[str, Any], ...] = attrs.field(default=(), repr=False)
    """The decoded rollout records, in file order (empty for an upstream folder)."""


def _big_verdict_value(data: Any) -> bool:
    """A verifier's expected or actual value that the fast reader may have turned into a float
    (SQL integers can be that large; every other number of a record is small)."""
    if not isinstance(data, dict):
        return False
    verdicts = [data, data.get("parity")]
    for verdict in verdicts:
        results = verdict.get("results") if isinstance(verdict, dict) else None
        for result in results if isinstance(results, list) else ():
            if isinstance(result, dict) and (
                may_hold_big_integer(result.get("expected"))
                or may_hold_big_integer(result.get("actual"))
            ):
                return True
    return False


def _read_rollouts(path: Path) -> tuple[list[VerdictRecord], list[Mapping[str, Any]]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MetricsError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from exc
    verdicts: list[VerdictRecord] = []
    records: list[Mapping[str, Any]] = []
    try:
        for number, line, data in jsonl_values(raw, fast_loads):
            if _big_verdict_value(data):
                data = loads_line(line)
            verdicts.append(parse_verdict(data, source=str(path), line=number))
            records.append(data)
    except JsonLineError as exc:
        raise MetricsError(exc.reason, source=str(path), line=exc.line) from None
    return verdicts, records


def _label(path: Path, records: list[Mapping[str, Any]]) -> str:
    models = sorted({str(r["model"]) for r in records if isinstance(r.get("model"), str)})
    name = path.parent.name if path.name == ROLLOUTS_FILE else path.stem
    if len(models) == 1 and models[0] != name:
        return f"{name} ({models[0]})"
    return name or str(path)


def load_run(path: str | Path, label: str | None = None) -> RunSource:
    """Read a run folder (with ``rollouts.jsonl``), a rollout ``.jsonl`` file or an upstream folder,
    as ``eog-core score`` and ``compare`` read it (:func:`eog_core.metrics.locate_run`).

    Anything else, or a run without a single record, raises :class:`MetricsError`.
    """
    where = locate_run(path)
    if where.kind == "rollouts":
        verdicts, records = _read_rollouts(where.path)
        if not verdicts:
            raise MetricsError("no rollout records in the file", source=str(where.path))
        return RunSource(
            label=label or _label(where.path, records),
            path=str(where.path),
            kind="rollouts",
            inputs=tuple(verdicts),
            records=tuple(records),
        )
    files = read_upstream_results(where.path)
    if not files:
        raise MetricsError(
            f"no {ROLLOUTS_FILE} and no upstream results_*.json files in the folder",
            source=str(where.path),
        )
    return RunSource(
        label=label or where.path.name,
        path=str(where.path),
        kind="upstream",
        inputs=tuple(files),
    )
