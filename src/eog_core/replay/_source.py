"""What re-scoring and replaying read: a run folder's records and states, and task files.

A run folder (``eog-core run`` or the gateway) holds ``rollouts.jsonl`` and, with
``--capture-state``, ``states/<sha256>.json.gz``; it holds no task file, so the tasks
come from the paths the caller names, each with the sha256 of the file it was read from.
Anything wrong with the input is a :class:`~eog_core.errors.UsageError` of one line.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core._jsonl import loads_line
from eog_core.errors import SchemaError, UsageError
from eog_core.run import ROLLOUTS_FILE, STATES_DIR
from eog_core.tasks import TASK_SUFFIXES, Task, load_tasks

__all__ = ["SourceRun", "TaskFile", "after_state", "load_task_files", "tool_names"]

CAPTURE_HINT = "rerun it with --capture-state"


@attrs.frozen(kw_only=True)
class TaskFile:
    """A task as read from a file, and that file's sha256 (hex)."""

    task: Task
    path: Path
    sha256: str


def load_task_files(paths: Sequence[str | Path]) -> dict[str, TaskFile]:
    """Task id -> its task file, for every task of ``paths`` (files or folders of them).

    A task id found twice is refused: which verifiers would rescore it is not clear.
    """
    files: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            files += sorted(
                p for p in given.rglob("*") if p.suffix in TASK_SUFFIXES and p.is_file()
            )
        elif given.is_file():
            files.append(given)
        else:
            raise UsageError(f"--tasks {given}: no such file or folder")
    found: dict[str, TaskFile] = {}
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        try:
            tasks = load_tasks(path)
        except SchemaError as exc:
            raise UsageError(f"--tasks: {exc}") from None
        for task in tasks:
            task_id = task.task_id or path.stem
            if task_id in found:
                raise UsageError(
                    f"--tasks: task {task_id!r} is in {found[task_id].path} and in {path}"
                )
            found[task_id] = TaskFile(task=task, path=path, sha256=digest)
    if not found:
        raise UsageError(f"--tasks: no tasks in {', '.join(map(str, paths))}")
    return found


@attrs.frozen(kw_only=True)
class SourceRun:
    """A run folder: its records in file order, and the states they name."""

    path: Path
    records: tuple[dict[str, Any], ...]

    @classmethod
    def read(cls, path: str | Path) -> SourceRun:
        folder = Path(path)
        rollouts = folder / ROLLOUTS_FILE
        if not rollouts.is_file():
            raise UsageError(f"{folder} is not a run folder (no {ROLLOUTS_FILE})")
        records = []
        for number, line in enumerate(rollouts.read_bytes().split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = loads_line(line)
                str(record["task_id"]), int(record["repeat"])
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{rollouts}:{number}: not a rollout record ({exc})") from None
            records.append(record)
        if not records:
            raise UsageError(f"{rollouts} holds no rollout records")
        return cls(path=folder, records=tuple(records))

    def state_file(self, sha: str) -> Path:
        return self.path / STATES_DIR / f"{sha}.json.gz"

    def state(self, sha: str) -> dict[str, Any]:
        """The state document ``sha`` names; a missing or damaged file is a UsageError."""
        path = self.state_file(sha)
        try:
            data = gzip.decompress(path.read_bytes())
        except FileNotFoundError:
            raise UsageError(f"{path}: the state a record names is missing") from None
        except (OSError, EOFError) as exc:
            raise UsageError(f"{path}: not a gzipped state ({exc})") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise UsageError(f"{path}: its content does not hash to its name (damaged)")
        document: dict[str, Any] = json.loads(data)
        return document

    def refuse_uncaptured(self) -> None:
        """No evaluated record with a captured state: nothing to work on."""
        if not any(after_state(r) for r in self.records):
            raise UsageError(
                f"{self.path} has no captured states (it ran without --capture-state, or every "
                f"capture was skipped): {CAPTURE_HINT}"
            )


def after_state(record: Mapping[str, Any]) -> str | None:
    """The final state id of an evaluated record with a captured state, else None."""
    state = record.get("state")
    if record.get("status") != "evaluated" or not isinstance(state, Mapping):
        return None
    sha = state.get("after")
    return sha if isinstance(sha, str) else None


def tool_names(record: Mapping[str, Any]) -> list[str]:
    """The tools a rollout called on a gym, in order (refused calls never ran), as
    ``tool_execution`` verifiers count them."""
    return [
        str(call["name"])
        for turn in record.get("turns") or ()
        for call in turn.get("tool_calls") or ()
        if call.get("gym")
    ]
