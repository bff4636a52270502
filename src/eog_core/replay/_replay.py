"""Replay a run: each rollout's recorded tool calls, in order, into freshly seeded gyms.

No model: the calls are the record's (``turns[].tool_calls[]``), their arguments with the
generated ids the replay's gyms gave instead (:class:`~eog_core.replay._normalise.IdMap`).
Every output is compared with the recorded one after normalising ids and timestamps; the
states before and after (when the run captured them) likewise; and the strict and parity
verdicts of the replayed state with the recorded ones. A rollout reproduces when all
three agree. The databases are deleted as each rollout ends (a failed deletion goes to
the janitor, which retries it before :func:`replay_run` returns).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import (
    EogError,
    GymError,
    JsonRpcError,
    SeedError,
    SeedFileError,
    StateError,
    UsageError,
)
from eog_core.gym import GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.model_view import tool_observation
from eog_core.replay._normalise import IdMap, expand, normalise_state
from eog_core.replay._rescore import outcome, verdict_fields
from eog_core.replay._source import SourceRun, TaskFile
from eog_core.run import verify_both
from eog_core.state import DEFAULT_MAX_ROWS, canonical_bytes, diff_states, snapshot
from eog_core.tasks import ToolSnapshot

__all__ = [
    "REPLAY_FILE",
    "REPLAY_FORMAT",
    "ReplayIncomplete",
    "ReplayReport",
    "RolloutReplay",
    "replay_run",
]

REPLAY_FILE = "replay.json"
REPLAY_FORMAT = "eog_core.replay/1"
_SHOWN = 5  # differences kept per rollout


class ReplayIncomplete(EogError):
    """The replay could not go on: a gym unreachable or failing (exit 3)."""


@attrs.frozen(kw_only=True)
class RolloutReplay:
    """One rollout replayed: what matched and what did not."""

    task_id: str
    repeat: int
    calls: int
    identical: int
    differences: tuple[str, ...]
    states: str
    """``equal``, ``differ`` or ``not captured``."""
    state_differences: tuple[str, ...]
    verdicts: Mapping[str, tuple[str, str]]
    """Policy -> (recorded, replayed) outcome: ``pass``, ``fail`` or ``incomplete``."""
    ids: Mapping[str, str]

    @property
    def outputs_identical(self) -> bool:
        return self.identical == self.calls

    @property
    def verdicts_agree(self) -> bool:
        return all(a == b for a, b in self.verdicts.values())

    @property
    def reproduced(self) -> bool:
        return self.outputs_identical and self.states != "differ" and self.verdicts_agree

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "repeat": self.repeat,
            "reproduced": self.reproduced,
            "outputs": {"calls": self.calls, "identical": self.identical},
            "output_differences": list(self.differences),
            "states": self.states,
            "state_differences": list(self.state_differences),
            "verdicts": {
                p: {"recorded": a, "replayed": b, "agree": a == b}
                for p, (a, b) in self.verdicts.items()
            },
            "ids": dict(self.ids),
        }


@attrs.frozen(kw_only=True)
class ReplayReport:
    source: Path
    rollouts: tuple[RolloutReplay, ...]
    skipped: tuple[tuple[str, int, str], ...]
    """(task id, repeat, why) of records not replayed."""
    tasks: Mapping[str, Mapping[str, Any]]

    @property
    def reproduced(self) -> bool:
        return all(r.reproduced for r in self.rollouts)

    def write(self, out_dir: str | Path) -> Path:
        """``out_dir/replay.json`` (the folder is made when missing); returns its path."""
        path = Path(out_dir) / REPLAY_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{REPLAY_FILE}.partial")
        partial.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", "utf-8")
        partial.replace(path)
        return path

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REPLAY_FORMAT,
            "source_run": str(self.source),
            "replayed": len(self.rollouts),
            "reproduced": sum(r.reproduced for r in self.rollouts),
            "all_reproduced": self.reproduced,
            "rollouts": [r.to_dict() for r in self.rollouts],
            "skipped": [{"task_id": t, "repeat": r, "reason": why} for t, r, why in self.skipped],
            "tasks": dict(self.tasks),
        }


@attrs.frozen(kw_only=True)
class _Gyms:
    directory: GymDirectory
    seed_root: Path | None
    tool_snapshots: Mapping[str, ToolSnapshot] | None
    timeouts: Timeouts | None
    max_rows: int
    forward_any_tool: bool


def _state_differences(
    recorded: Mapping[str, Any], replayed: Mapping[str, Any], what: str
) -> list[str]:
    if canonical_bytes(recorded) == canonical_bytes(replayed):
        return []
    changes = diff_states(recorded, replayed).changes
    if not changes:
        return [f"{what}: differs in volatile columns only"]
    return [
        f"{what}: {c.gym}.{c.table} {c.op} {c.key if c.key is not None else ''}".rstrip()
        for c in changes[:_SHOWN]
    ]


async def _call(session: TaskSession, name: str, arguments: Any) -> str:
    try:
        result = await session.call_tool(name, arguments)
    except JsonRpcError as exc:  # shown to the model as the loop shows it
        return tool_observation(exc)
    except GymError as exc:
        raise ReplayIncomplete(
            f"task {session.task.task_id!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return tool_observation(result)


async def _replay_one(
    run: SourceRun, task_file: TaskFile, record: Mapping[str, Any], gyms: _Gyms, janitor: Janitor
) -> RolloutReplay:
    recorded_state = record.get("state")
    state: Mapping[str, Any] = recorded_state if isinstance(recorded_state, Mapping) else {}
    captured = "after" in state and "before" in state
    ids = IdMap()
    differences: list[str] = []
    state_differences: list[str] = []
    calls = identical = 0
    try:
        async with TaskSession.start(
            task_file.task,
            directory=gyms.directory,
            seed_root=gyms.seed_root,
            tool_snapshots=gyms.tool_snapshots,
            janitor=janitor,
            timeouts=gyms.timeouts,
            forward_any_tool=gyms.forward_any_tool,
        ) as session:
            if captured:
                before = await snapshot(session, max_rows=gyms.max_rows)
                state_differences += _state_differences(
                    normalise_state(run.state(state["before"])),
                    normalise_state(before.document),
                    "before",
                )
            for turn in record.get("turns") or ():
                for call in turn.get("tool_calls") or ():
                    calls += 1
                    replayed = await _call(
                        session, str(call["name"]), ids.arguments(call.get("arguments"))
                    )
                    found = ids.compare(expand(call.get("observation")), expand(replayed))
                    if found:
                        differences += [f"call {calls} ({call['name']}): {d}" for d in found]
                    else:
                        identical += 1
            strict, parity = await verify_both(session, record.get("final_answer"), None)
            if strict.failure_kind == "gym_unreachable":
                raise ReplayIncomplete(
                    f"task {task_file.task.task_id!r}: the gym did not answer the verifiers"
                )
            if captured:
                after = await snapshot(session, max_rows=gyms.max_rows)
                state_differences += _state_differences(
                    normalise_state(run.state(state["after"]), ids),
                    normalise_state(after.document),
                    "after",
                )
    except SeedFileError as exc:
        raise UsageError(str(exc)) from None
    except (SeedError, GymError, StateError) as exc:  # StateError: a snapshot that failed
        raise ReplayIncomplete(
            f"task {task_file.task.task_id!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return RolloutReplay(
        task_id=str(record["task_id"]),
        repeat=int(record["repeat"]),
        calls=calls,
        identical=identical,
        differences=tuple(differences[:_SHOWN]),
        states="not captured" if not captured else ("differ" if state_differences else "equal"),
        state_differences=tuple(state_differences[:_SHOWN]),
        verdicts={
            "strict": (outcome(record), outcome(verdict_fields(strict))),
            "parity": (outcome(record.get("parity") or {}), outcome(verdict_fields(parity))),
        },
        ids=dict(ids.ids),
    )


async def replay_run(
    run_dir: str | Path,
    task_files: Mapping[str, TaskFile],
    directory: GymDirectory,
    *,
    seed_root: str | Path | None = None,
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None,
    timeouts: Timeouts | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    forward_any_tool: bool = False,
) -> ReplayReport:
    """Replay every evaluated rollout of ``run_dir`` whose task ``task_files`` holds, one
    after another, into fresh databases of the gyms of ``directory`` (``forward_any_tool``:
    as the run had it, calls of tools outside the task's set go to the gym)."""
    run = SourceRun.read(run_dir)
    gyms = _Gyms(
        directory=directory,
        seed_root=None if seed_root is None else Path(seed_root),
        tool_snapshots=tool_snapshots,
        timeouts=timeouts,
        max_rows=max_rows,
        forward_any_tool=forward_any_tool,
    )
    skipped: list[tuple[str, int, str]] = []
    todo = []
    for record in sorted(run.records, key=lambda r: (str(r["task_id"]), int(r["repeat"]))):
        task_id, repeat = str(record["task_id"]), int(record["repeat"])
        if task_id not in task_files:
            skipped.append((task_id, repeat, "not in --tasks"))
        elif record.get("status") != "evaluated":
            skipped.append((task_id, repeat, "not evaluated in the run"))
        else:
            todo.append(record)
    if not todo:
        raise UsageError(
            f"nothing to replay in {run.path}: no evaluated rollout of the tasks of --tasks"
        )
    replays = []
    async with Janitor(timeouts=timeouts) as janitor:
        for record in todo:
            replays.append(
                await _replay_one(run, task_files[str(record["task_id"])], record, gyms, janitor)
            )
    tasks = {
        task_id: {
            "task_file": str(task_files[task_id].path),
            "task_sha256": task_files[task_id].sha256,
            "rollouts": sum(r.task_id == task_id for r in replays),
            "reproduced": sum(r.reproduced for r in replays if r.task_id == task_id),
        }
        for task_id in dict.fromkeys(r.task_id for r in replays)
    }
    return ReplayReport(
        source=run.path, rollouts=tuple(replays), skipped=tuple(skipped), tasks=tasks
    )
