"""Reading one run for the report: a ``rollouts.jsonl`` (or its folder) or an upstream result folder.

A rollout record is read once: the same decoded object gives the metrics their
verdict (:func:`eog_core.metrics.parse_verdict`) and the transcript viewer its
turns. Unknown keys are ignored and ``stop_reason`` / ``failure_kind`` are open
strings, so records written by newer versions still load. An upstream folder
(``run_<i>/results_*.json``) gives its files to the metrics; the transcripts are read
from the files later (``_upstream``), a file at a time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.metrics import (
    MetricsError,
    MetricsInput,
    VerdictRecord,
    parse_verdict,
    read_upstream_results,
)
from eog_core.report._fastjson import exact_loads, loads, may_hold_big_integer

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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MetricsError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from exc
    verdicts: list[VerdictRecord] = []
    records: list[Mapping[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = loads(raw)
            if _big_verdict_value(data):
                data = exact_loads(raw)
        except json.JSONDecodeError as exc:
            raise MetricsError(
                f"invalid JSON at column {exc.colno}: {exc.msg}", source=str(path), line=number
            ) from exc
        verdicts.append(parse_verdict(data, source=str(path), line=number))
        records.append(data)
    return verdicts, records


def _label(path: Path, records: list[Mapping[str, Any]]) -> str:
    models = sorted({str(r["model"]) for r in records if isinstance(r.get("model"), str)})
    name = path.parent.name if path.name == ROLLOUTS_FILE else path.stem
    if len(models) == 1 and models[0] != name:
        return f"{name} ({models[0]})"
    return name or str(path)


def load_run(path: str | Path, label: str | None = None) -> RunSource:
    """Read a run folder (with ``rollouts.jsonl``), a rollout ``.jsonl`` file or an upstream folder.

    Anything else, or a file without a single record, raises :class:`MetricsError`.
    """
    source = Path(path)
    rollouts = source / ROLLOUTS_FILE if source.is_dir() else source
    if rollouts.is_file() and rollouts.suffix == ".jsonl":
        verdicts, records = _read_rollouts(rollouts)
        if not verdicts:
            raise MetricsError("no rollout records in the file", source=str(rollouts))
        return RunSource(
            label=label or _label(rollouts, records),
            path=str(rollouts),
            kind="rollouts",
            inputs=tuple(verdicts),
            records=tuple(records),
        )
    if source.is_dir():
        files = read_upstream_results(source)
        if not files:
            raise MetricsError(
                f"no {ROLLOUTS_FILE} and no upstream results_*.json files in the folder",
                source=str(source),
            )
        return RunSource(
            label=label or source.name, path=str(source), kind="upstream", inputs=tuple(files)
        )
    if not source.exists():
        raise MetricsError("no such file or folder", source=str(source))
    raise MetricsError(
        f"expected a run folder, a {ROLLOUTS_FILE} file or an upstream result folder",
        source=str(source),
    )
