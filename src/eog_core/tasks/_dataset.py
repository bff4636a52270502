"""The public dataset as downloaded: Parquet files (through the ``parquet`` extra,
pyarrow), each row a task; and choosing a subset by domain, mode and a seeded,
domain-stratified sample.

The dataset's configs are modes (``oracle``, ``plus_5_tools``, ...) and its splits
domains; a downloaded file sits in a folder named for its config and is named for
its split (``oracle/csm-00000-of-00001.parquet``), so a row without ``mode`` or
``domain`` takes them from its path.
"""

from __future__ import annotations

import os
import random
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import SchemaError, UsageError
from eog_core.tasks._formats import task_from_mapping
from eog_core.tasks._schema import Task

__all__ = [
    "MODES",
    "mode_from_path",
    "parquet_rows",
    "sample_stratified",
    "select_tasks",
    "task_from_row",
]

MODES = ("oracle", "plus_5_tools", "plus_10_tools", "plus_15_tools")
"""The dataset's configs: the task's own tools, or 5, 10 or 15 distractor tools more."""


def mode_from_path(path: str | os.PathLike[str]) -> str | None:
    """The innermost folder (or file-name prefix) of ``path`` that names a mode."""
    parts = Path(path).parts
    for part in reversed(parts):
        for mode in sorted(MODES, key=len, reverse=True):
            if part == mode or part.startswith((f"{mode}-", f"{mode}.", f"{mode}_")):
                return mode
    return None


_NOT_SPLITS = frozenset({*MODES, "train", "test", "validation", "data", "of"})


def _split_from_name(path: Path) -> str | None:
    """``csm-00000-of-00001.parquet`` or ``oracle-csm-00000.parquet`` -> ``csm`` (the split
    a Hub file is named for): the first word of the name that is no mode and no number."""
    words = path.name.split(".", 1)[0].split("-")
    return next((w for w in words if w and not w.isdigit() and w not in _NOT_SPLITS), None)


def parquet_rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` for each row of a Parquet file (``where`` is ``file:row N``)."""
    source = Path(path)
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise SchemaError(
            "reading Parquet needs the parquet extra: pip install 'eog-core[parquet]'",
            source=str(source),
        ) from None
    try:
        parquet = pq.ParquetFile(source)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise SchemaError(f"cannot read Parquet file: {exc}", source=str(source)) from exc
    number = 0
    with parquet:
        for batch in parquet.iter_batches(batch_size=256):
            for row in batch.to_pylist():
                number += 1
                yield f"{source}:row {number}", row


def task_from_row(row: dict[str, Any], *, where: str, path: Path) -> Task:
    """A dataset row as a Task; ``mode`` and ``domain`` from the path when the row lacks them."""
    task = task_from_mapping(row, source=where)
    changes: dict[str, Any] = {}
    if task.mode is None and (mode := mode_from_path(path.parent / path.stem)) is not None:
        changes["mode"] = mode
    if task.domain is None and (split := _split_from_name(path)) is not None:
        changes["domain"] = split
    return attrs.evolve(task, **changes) if changes else task


def sample_stratified(tasks: Sequence[Task], limit: int, seed: int) -> list[Task]:
    """A seeded random ``limit`` of ``tasks`` with each domain in proportion (largest
    remainders get the rounding; every domain with a share of at least one keeps it),
    in their original order."""
    if limit < 0:
        raise UsageError(f"limit must be at least 0, got {limit}")
    if limit >= len(tasks):
        return list(tasks)
    groups: dict[str, list[int]] = {}
    for index, task in enumerate(tasks):
        groups.setdefault(task.domain or "?", []).append(index)
    total = len(tasks)
    shares = {d: limit * len(ix) / total for d, ix in groups.items()}
    counts = {d: int(share) for d, share in shares.items()}
    left = limit - sum(counts.values())
    for domain in sorted(groups, key=lambda d: (-(shares[d] - counts[d]), d))[:left]:
        counts[domain] += 1
    rng = random.Random(seed)
    chosen: set[int] = set()
    for domain in sorted(groups):
        chosen.update(rng.sample(groups[domain], counts[domain]))
    return [tasks[i] for i in sorted(chosen)]


def select_tasks(
    tasks: Sequence[Task],
    *,
    domains: Collection[str] | None = None,
    modes: Collection[str] | None = None,
    limit: int | None = None,
    shuffle_seed: int = 0,
) -> list[Task]:
    """The tasks of ``domains`` and ``modes`` (None: all), then at most ``limit`` of them
    (a seeded sample stratified by domain, never the head of the file)."""
    unknown = sorted(set(modes or ()) - set(MODES))
    if unknown:
        raise UsageError(f"unknown mode(s) {', '.join(unknown)}; the modes are {', '.join(MODES)}")
    chosen = [
        t for t in tasks if (not domains or t.domain in domains) and (not modes or t.mode in modes)
    ]
    return chosen if limit is None else sample_stratified(chosen, limit, shuffle_seed)
