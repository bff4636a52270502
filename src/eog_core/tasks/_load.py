"""Loading tasks from files: one JSON task, a ``.jsonl`` or ``.parquet`` of rows, or a directory."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core._json import decode_json
from eog_core.errors import SchemaError
from eog_core.tasks._dataset import parquet_rows, task_from_row
from eog_core.tasks._formats import task_from_mapping
from eog_core.tasks._schema import Task

__all__ = ["DEFAULT_GYMS", "TASK_SUFFIXES", "iter_tasks", "load_task", "load_tasks"]

TASK_SUFFIXES = (".json", ".jsonl", ".parquet")

#: The standard gym containers: name -> (domain, port on localhost).
DEFAULT_GYMS: Mapping[str, tuple[str, int]] = {
    "sn-csm-server": ("csm", 8001),
    "gym-teams-mcp": ("teams", 8002),
    "gym-calendar": ("calendar", 8003),
    "gym-email-mcp": ("email", 8004),
    "gym-itsm-mcp": ("itsm", 8006),
    "sn-hr-internal": ("hr", 8008),
    "gym-google-drive-mcp": ("drive", 8009),
}


def _infer_domain(task: Task) -> str | None:
    domains = {DEFAULT_GYMS[g.name][0] for g in task.gym_servers if g.name in DEFAULT_GYMS}
    if len(task.gym_servers) > 1 and domains:
        return "hybrid"
    return domains.pop() if len(domains) == 1 else None


def _read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SchemaError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from exc
    return decode_json(data, source=str(path))


def _complete(task: Task, *, default_id: str | None) -> Task:
    changes: dict[str, Any] = {}
    if task.task_id is None and default_id is not None:
        changes["task_id"] = default_id
    if task.domain is None and (domain := _infer_domain(task)) is not None:
        changes["domain"] = domain
    return attrs.evolve(task, **changes) if changes else task


def load_task(source: str | os.PathLike[str] | Mapping[str, Any]) -> Task:
    """Load one task from a JSON file path or an already-parsed mapping.

    Any of the three formats is accepted (upstream task, dataset row, NeMo row or
    rollout record). A task file without ``task_id`` takes the file name's stem;
    a missing ``domain`` is inferred from standard gym names.
    """
    if isinstance(source, Mapping):
        return _complete(task_from_mapping(source), default_id=None)
    path = Path(source)
    if path.suffix == ".jsonl":
        tasks = load_tasks(path)
        if len(tasks) != 1:
            raise SchemaError(f"expected exactly one row, found {len(tasks)}", source=str(path))
        return tasks[0]
    return _complete(task_from_mapping(_read_json(path), source=str(path)), default_id=path.stem)


def iter_tasks(path: str | os.PathLike[str]) -> Iterator[Task]:
    """Yield the tasks of a ``.jsonl``, ``.json`` or ``.parquet`` file or of a directory of them."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.suffix in TASK_SUFFIXES and p.is_file())
        if not files:
            raise SchemaError(
                "no .json, .jsonl or .parquet task files in directory", source=str(root)
            )
        for file in files:
            yield from iter_tasks(file)
        return
    if root.suffix == ".parquet":
        for where, row in parquet_rows(root):
            yield _complete(task_from_row(row, where=where, path=root), default_id=None)
        return
    if root.suffix != ".jsonl":
        yield load_task(root)
        return
    yield from _iter_rows(root)


def _iter_rows(root: Path) -> Iterator[Task]:
    """The rows of a ``.jsonl`` file; errors name ``file:line`` and, for bad bytes, the file offset."""
    try:
        handle = root.open("rb")
    except OSError as exc:
        raise SchemaError(f"cannot read file: {exc.strerror or exc}", source=str(root)) from exc
    with handle:
        offset = 0
        for number, line in enumerate(handle, start=1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            where = f"{root}:{number}"
            row = decode_json(line, source=where, start=start)
            yield _complete(task_from_mapping(row, source=where), default_id=None)


def load_tasks(path: str | os.PathLike[str]) -> list[Task]:
    """Load every task of a ``.jsonl`` file, a ``.json`` file or a directory."""
    return list(iter_tasks(path))
