"""The tasks ``certify`` is given, each with the sha256 of its bytes and of its seed files.

Folders are walked as ``load_tasks`` walks them, except that agentrelbench 0.1.0's
task folders read as tasks: ``*.script.json`` and ``damage.json`` beside a task are
not tasks, and a ``task.json`` without a ``task_id`` takes its folder's name (where
``load_task`` would give every such task the id ``task``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs

from eog_core.certify._certificate import CertificateFinding, sha256_hex
from eog_core.certify._runner import TaskSource
from eog_core.certify._scripts import SCRIPT_SUFFIX
from eog_core.errors import SchemaError, SeedFileError
from eog_core.tasks import TASK_SUFFIXES, GymServer, Task, load_task, load_tasks

__all__ = ["load_sources"]

_NOT_TASKS = ("damage.json",)

StaticFindings = Callable[[Task], Iterable[CertificateFinding]]
Selection = Callable[[list[Task]], Iterable[Task]]
"""Which of the loaded tasks to certify (``--domain``/``--mode``/``--limit``)."""


def _files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.suffix in TASK_SUFFIXES
        and not p.name.endswith(SCRIPT_SUFFIX)
        and p.name not in _NOT_TASKS
    )


def _named(task: Task, file: Path) -> Task:
    if file.name != "task.json" or task.task_id != "task":
        return task
    try:
        given = "task_id" in json.loads(file.read_bytes())
    except ValueError:  # pragma: no cover - it loaded as a task a moment ago
        given = True
    return task if given else attrs.evolve(task, task_id=file.parent.name)


def _tasks_of(file: Path) -> list[tuple[Task, str, bytes]]:
    if file.suffix == ".jsonl":
        rows = [
            (n, line.rstrip(b"\r"))
            for n, line in enumerate(file.read_bytes().split(b"\n"), start=1)
            if line.strip()
        ]
        tasks = load_tasks(file)  # one task per non-blank line, in order
        return [(task, f"{file}:{n}", row) for task, (n, row) in zip(tasks, rows, strict=True)]
    if file.suffix == ".parquet":
        data = file.read_bytes()
        return [(task, str(file), data) for task in load_tasks(file)]
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise SchemaError(f"cannot read file: {exc.strerror or exc}", source=str(file)) from None
    return [(_named(load_task(file), file), str(file), data)]


def _seed_file(task: Task, gym: GymServer, seed_root: Path | None) -> Path:
    """The gym's seed file; a SeedFileError when the task names none or it is not there."""
    if not gym.seed_database_file:
        raise SeedFileError(
            f"task {task.task_id!r}: gym {gym.name!r} names no seed_database_file",
            path="",
            gym=gym.name,
        )
    seed = Path(gym.seed_database_file)
    if not seed.is_absolute() and seed_root is not None:
        seed = seed_root / seed
    if not seed.is_file():
        given = "" if seed_root is not None else " (no --seed-root given)"
        raise SeedFileError(
            f"task {task.task_id!r}: the seed file of gym {gym.name!r} is not found: {seed}{given}",
            path=str(seed),
            gym=gym.name,
        )
    return seed


def load_sources(
    paths: Sequence[Path],
    *,
    seed_root: Path | None = None,
    static: StaticFindings | None = None,
    select: Selection | None = None,
) -> list[TaskSource]:
    """Every task of ``paths`` (those ``select`` keeps of them, when given) as a
    :class:`TaskSource`; raises SchemaError for a task that does not load and for two kept
    tasks of one id (certificates are keyed by task id), and SeedFileError for a kept
    task's seed file that is not found (under ``seed_root`` when relative).

    Each task's ``seed_database_file`` becomes the absolute path of the file hashed: the
    gyms are seeded with exactly the bytes the certificate names, whatever ``seed_root``
    ``certify_tasks`` is given."""
    loaded: list[tuple[Task, str, bytes]] = []
    for path in paths:
        files = _files(path)
        if not files:
            raise SchemaError("no task files in folder", source=str(path))
        for file in files:
            loaded += _tasks_of(file)
    if select is not None:  # the dataset's modes repeat each task id: select before the check
        kept = {id(task) for task in select([task for task, _, _ in loaded])}
        loaded = [entry for entry in loaded if id(entry[0]) in kept]
    hashed: dict[Path, str] = {}
    sources: list[TaskSource] = []
    seen: dict[str, str] = {}
    for task, where, data in loaded:
        task_id = task.task_id or ""
        if task_id in seen:
            raise SchemaError(
                f"task id {task_id!r} is also the id of the task in {seen[task_id]} "
                "(one certificate per task id: choose one with --mode)",
                source=where,
            )
        seen[task_id] = where
        seeds = {}
        servers = []
        for gym in task.gym_servers:
            seed = _seed_file(task, gym, seed_root)
            if seed not in hashed:
                hashed[seed] = sha256_hex(seed.read_bytes())
            seeds[gym.name] = {"path": str(seed), "sha256": hashed[seed]}
            servers.append(attrs.evolve(gym, seed_database_file=str(seed.absolute())))
        sources.append(
            TaskSource(
                task=attrs.evolve(task, gym_servers=tuple(servers)),
                file=where,
                sha256=sha256_hex(data),
                seed_files=seeds,
                static=tuple(static(task)) if static is not None else (),
            )
        )
    return sources
