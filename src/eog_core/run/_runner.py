"""A whole evaluation: tasks x repeats, ``concurrency`` rollouts in flight, one writer.

Rollouts run repeat by repeat (every task's repeat 0, then repeat 1...), so a
run stopped half way has balanced repeats. Each finished rollout is appended to
``rollouts.jsonl`` and, when evaluated, written to ``upstream/`` before the next
one is taken. Cancelling :func:`run_evaluation` (Ctrl-C in the CLI) takes no new
work, cancels the rollouts in flight (each deletes its databases on the way
out), lets the janitor retry any deletion that failed, and leaves every output
file valid; the rollouts that were cancelled simply run on the next resume.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import UsageError
from eog_core.gym import GymDirectory, Janitor
from eog_core.run._model import ModelClient, ModelJudge, ModelSettings
from eog_core.run._output import RolloutLog, write_upstream_result
from eog_core.run._ray import run_on_ray
from eog_core.run._records import RolloutKey, rollout_key
from eog_core.run._rollout import RolloutOptions, run_rollout
from eog_core.tasks import Task

__all__ = ["RunProgress", "RunReport", "run_evaluation"]

log = logging.getLogger("eog_core.run")


@attrs.define(kw_only=True)
class RunProgress:
    """Live counters of a run (what a progress bar shows); updated as rollouts start and end."""

    total: int = 0
    skipped: int = 0
    done: int = 0
    in_flight: int = 0
    evaluated: int = 0
    passed: int = 0
    incomplete: int = 0
    started: float = attrs.field(factory=time.monotonic)

    @property
    def pass_rate(self) -> float | None:
        """Strict successes over evaluated rollouts finished in this run."""
        return self.passed / self.evaluated if self.evaluated else None

    def eta_seconds(self) -> float | None:
        remaining = self.total - self.skipped - self.done
        if not self.done or remaining <= 0:
            return None if remaining > 0 else 0.0
        return (time.monotonic() - self.started) / self.done * remaining


@attrs.frozen(kw_only=True)
class RunReport:
    """What a run ended with: every record of the output (earlier ones included)."""

    out_dir: Path
    records: tuple[Mapping[str, Any], ...]
    planned: int
    skipped: int
    ran: int

    @property
    def incomplete(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(r for r in self.records if r.get("status") != "evaluated")

    @property
    def all_evaluated(self) -> bool:
        return len(self.records) == self.planned and not self.incomplete


def _check_unique(tasks: Sequence[Task]) -> None:
    seen: dict[tuple[str, str, str], Task] = {}
    for task in tasks:
        key = rollout_key(task, 0)[:3]
        if key in seen:
            raise UsageError(f"task {key[2]!r} ({key[1]}, {key[0]}) is given twice; every task "
                             "of a run needs its own id (results are keyed by it)")
        seen[key] = task


async def run_evaluation(
    tasks: Sequence[Task],
    settings: ModelSettings,
    out_dir: str | os.PathLike[str],
    *,
    repeats: int = 1,
    concurrency: int = 8,
    directory: GymDirectory | None = None,
    options: RolloutOptions | None = None,
    judge_model: str | None = None,
    progress: RunProgress | None = None,
    on_record: Callable[[Mapping[str, Any]], None] | None = None,
    ray_address: str | None = None,
    ray_actors: int | None = None,
) -> RunReport:
    """Evaluate ``settings.model`` on ``tasks`` x ``repeats``; resumes what ``out_dir`` holds.

    ``options.judge`` defaults to the same model endpoint at temperature 0.0
    (``judge_model`` names another model on it), as upstream judges with the agent's client.
    ``ray_address`` shards the rollouts over Ray actors (``docs/run.md``); records
    still stream back to this one writer, so the output is the same as a local run's.
    """
    if repeats < 1 or concurrency < 1:
        raise UsageError(f"repeats and concurrency must be at least 1, got {repeats} and {concurrency}")
    _check_unique(tasks)
    out = Path(out_dir)
    rollouts = RolloutLog.open(out, model=settings.model)
    planned: dict[RolloutKey, Task] = {rollout_key(task, r): task
                                       for r in range(repeats) for task in tasks}
    pending = [(task, key[3]) for key, task in planned.items() if key not in rollouts.finished]
    progress = progress if progress is not None else RunProgress()
    progress.total, progress.skipped = len(planned), len(planned) - len(pending)
    new: list[Mapping[str, Any]] = []
    work = iter(pending)
    directory = directory if directory is not None else GymDirectory()
    options = options or RolloutOptions()

    def started() -> None:
        progress.in_flight += 1

    def finished(task: Task, record: Mapping[str, Any]) -> None:
        progress.in_flight -= 1
        rollouts.append(record)
        if record["status"] == "evaluated":
            write_upstream_result(out, task, record, tools_available=record["tools_offered"])
            progress.evaluated += 1
            progress.passed += bool(record["success"])
        else:
            progress.incomplete += 1
        progress.done += 1
        new.append(record)
        if on_record is not None:
            on_record(record)

    async def worker(client: ModelClient, janitor: Janitor, rollout_options: RolloutOptions) -> None:
        for task, repeat in work:
            started()
            try:
                record = await run_rollout(task, repeat, client=client, directory=directory,
                                           janitor=janitor, options=rollout_options)
            except BaseException:
                progress.in_flight -= 1
                raise
            finished(task, record)

    try:
        if ray_address is not None:
            leaks = await run_on_ray(pending, settings, directory.replicas, options,
                                     address=ray_address, concurrency=concurrency,
                                     num_actors=ray_actors, judge_model=judge_model,
                                     on_start=started, on_record=finished)
            for leak in leaks:
                log.error("database left on a gym by a Ray worker: %s", leak)
        else:
            await _run_here(settings, directory, options, judge_model, concurrency, len(pending),
                            worker)
    finally:
        rollouts.close()
    records: dict[RolloutKey, Mapping[str, Any]] = {**rollouts.finished}
    for record in new:
        records[(record["mode"], record["domain"], record["task_id"], record["repeat"])] = record
    ordered = tuple(records[key] for key in planned if key in records)
    return RunReport(out_dir=out, records=ordered, planned=len(planned),
                     skipped=progress.skipped, ran=len(new))


async def _run_here(settings: ModelSettings, directory: GymDirectory, options: RolloutOptions,
                    judge_model: str | None, concurrency: int, pending: int,
                    worker: Callable[[ModelClient, Janitor, RolloutOptions], Any]) -> None:
    """The local run: ``concurrency`` workers on this event loop."""
    # The directory holds the connection pool, and with it one MCP session per gym
    # replica shared by every rollout; the janitor finishes failed deletions first.
    async with ModelClient(settings) as client, directory, Janitor() as janitor:
        if options.judge is None:
            options = attrs.evolve(options, judge=ModelJudge(client, judge_model))
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, pending)):
                group.create_task(worker(client, janitor, options))
