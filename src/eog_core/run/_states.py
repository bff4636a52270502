"""``OUT/states/<sha256>.json.gz``: the captured states of a run, content-addressed.

Each state is gzipped (no timestamp in the header, so equal states are equal
files) and written atomically, before the record that names it, so a record's
states are always there; an equal state is stored once. A run's states stay
within ``max_bytes`` compressed (those already in the folder count): a rollout
whose new states would cross it keeps its verdict and records why its capture
was skipped. The record gains ``state``: ``{"before": SHA, "after": SHA,
"bytes": N}`` (N: the compressed bytes of its states, each counted once) or
``{"skipped": REASON}``.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import StateError
from eog_core.gym import TaskSession
from eog_core.run._folder import atomic_write
from eog_core.state import DEFAULT_MAX_ROWS, DamageSpec, StateSnapshot, damage_verdict, snapshot
from eog_core.tasks import Task

__all__ = [
    "DEFAULT_MAX_STATE_BYTES",
    "PENDING_STATES",
    "STATES_DIR",
    "StateCapture",
    "StateStore",
    "capture",
    "capture_fields",
    "damage_field",
    "pending_states",
    "skipped_capture",
    "state_path",
    "states_present",
]

STATES_DIR = "states"
DEFAULT_MAX_STATE_BYTES = 1 << 30
"""1 GiB of compressed states per run folder."""
PENDING_STATES = "_pending_states"
"""The record key carrying a rollout's compressed states to the writer (never written)."""


log = logging.getLogger("eog_core.run")


@attrs.frozen(kw_only=True)
class StateCapture:
    """How a run captures states: the rows read per table, the compressed bytes per run."""

    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_STATE_BYTES
    damage_specs: Mapping[str, DamageSpec] | None = None
    """Task id -> what its rollouts may change (``--damage-specs``); a task without one has
    its writes recorded ``unjudged``."""


async def capture(session: TaskSession, max_rows: int) -> StateSnapshot | str:
    """The session's state, or why it could not be captured (the rollout carries on)."""
    try:
        return await snapshot(session, max_rows=max_rows)
    except StateError as exc:
        log.warning("state capture of %s skipped: %s", session.task.task_id, exc)
        return f"StateError: {exc}"


def capture_fields(before: StateSnapshot | str, after: StateSnapshot | str) -> dict[str, Any]:
    """The record's pending states (the writer stores them and sets ``state``)."""
    if isinstance(before, str) or isinstance(after, str):
        return {PENDING_STATES: skipped_capture(before if isinstance(before, str) else str(after))}
    return {PENDING_STATES: pending_states(before, after)}


def damage_field(
    task: Task,
    before: StateSnapshot | str,
    after: StateSnapshot | str,
    *,
    strict_success: bool,
    specs: Mapping[str, DamageSpec] | None,
) -> dict[str, Any]:
    """The record's ``damage`` verdict from the two snapshots (docs/state.md, "Collateral
    damage"); nothing when either could not be captured. Strict and parity never change."""
    if isinstance(before, str) or isinstance(after, str):
        return {}
    spec = None if specs is None or task.task_id is None else specs.get(task.task_id)
    verdict = damage_verdict(
        before.document, after.document, task=task, spec=spec, strict_success=strict_success
    )
    return {"damage": verdict}


def state_path(out_dir: Path, sha: str) -> Path:
    return out_dir / STATES_DIR / f"{sha}.json.gz"


def pending_states(before: StateSnapshot, after: StateSnapshot) -> dict[str, Any]:
    """What a rollout hands the writer: the two ids and each state compressed."""
    files = {s.id: gzip.compress(s.data, compresslevel=6, mtime=0) for s in (before, after)}
    return {"before": before.id, "after": after.id, "files": files}


def states_present(out_dir: Path, record: Mapping[str, Any]) -> bool:
    """Every state file ``record`` names is stored (a record that names none: True)."""
    state = record.get("state")
    if not isinstance(state, Mapping) or "skipped" in state:
        return True
    return all(
        isinstance(sha, str) and state_path(out_dir, sha).is_file()
        for sha in (state.get("before"), state.get("after"))
    )


def skipped_capture(reason: str) -> dict[str, Any]:
    return {"skipped": reason}


@attrs.define
class StateStore:
    """The states folder of one run: what it holds, and the bound on what it may hold."""

    out_dir: Path
    max_bytes: int
    used: int = 0

    @classmethod
    def open(cls, out_dir: Path, max_bytes: int) -> StateStore:
        """Remove what a killed writer left half-written; count what is stored."""
        folder = out_dir / STATES_DIR
        used = 0
        if folder.is_dir():
            for path in folder.iterdir():
                if path.name.startswith(".partial-"):
                    path.unlink(missing_ok=True)
                elif path.name.endswith(".json.gz"):
                    used += path.stat().st_size
        return cls(out_dir=out_dir, max_bytes=max_bytes, used=used)

    def store(self, record: MutableMapping[str, Any]) -> None:
        """Write the record's pending states (first: the record follows) and set its
        ``state`` field; past the bound, the record says the capture was skipped."""
        pending = record.pop(PENDING_STATES, None)
        if pending is None:
            return
        if "skipped" in pending:
            record["state"] = skipped_capture(pending["skipped"])
            return
        files: dict[str, bytes] = pending["files"]
        new = {
            sha: data for sha, data in files.items() if not state_path(self.out_dir, sha).is_file()
        }
        adding = sum(len(data) for data in new.values())
        if self.used + adding > self.max_bytes:
            record["state"] = skipped_capture(
                f"the run's states would take {self.used + adding} compressed bytes, past "
                f"--max-state-bytes {self.max_bytes}"
            )
            return
        (self.out_dir / STATES_DIR).mkdir(parents=True, exist_ok=True)
        for sha, data in new.items():
            atomic_write(state_path(self.out_dir, sha), data)
        self.used += adding
        record["state"] = {
            "before": pending["before"],
            "after": pending["after"],
            "bytes": sum(len(data) for data in files.values()),
        }
