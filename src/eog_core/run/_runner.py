"""A whole evaluation: tasks x repeats, ``concurrency`` rollouts in flight, one writer.

Rollouts run repeat by repeat (every task's repeat 0, then repeat 1...), so a
run stopped half way has balanced repeats; they are planned lazily, so memory
does not grow with ``repeats``. Each finished rollout, when evaluated, is written
to ``upstream/`` and then appended to ``rollouts.jsonl``.

Before anything is seeded the model endpoint is checked (:meth:`ModelClient.preflight`):
a wrong URL, key or model name raises :class:`ModelPreflightError`. After
``max_consecutive_unreachable`` rollouts in a row end ``model_unreachable`` the
run stops taking work and raises :class:`ModelOutageError`; what was recorded
stays, and resuming runs the rest. Cancelling :func:`run_evaluation` (Ctrl-C in the CLI) takes no new
work, cancels the rollouts in flight (each deletes its databases on the way
out), lets the janitor retry any deletion that failed, and leaves every output
file valid; the rollouts that were cancelled simply run on the next resume.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from typing_extensions import Unpack

from eog_core.errors import EogError, ModelOutageError, UsageError
from eog_core.gym import GymDirectory, Janitor
from eog_core.run._folder import FolderTrace
from eog_core.run._judge import ModelJudge
from eog_core.run._model import ModelClient
from eog_core.run._output import (
    ROLLOUTS_FILE,
    RolloutLog,
    upstream_path,
    write_upstream_result,
)
from eog_core.run._plan import EvaluationPlan, EvaluationPlanKeywords, plan_from_keywords
from eog_core.run._ray import run_on_ray
from eog_core.run._records import RolloutKey, rollout_key
from eog_core.run._rollout import RolloutOptions, check_seed_files, run_rollout
from eog_core.run._settings import ModelSettings
from eog_core.run._states import StateStore, states_present
from eog_core.tasks import Task

__all__ = ["MAX_CONCURRENCY", "MAX_REPEATS", "RunProgress", "RunReport", "run_evaluation"]

log = logging.getLogger("eog_core.run")

MAX_REPEATS = 100_000
"""More repeats than any evaluation needs; a bigger number is a typo (``--repeats 10**20``)."""
MAX_CONCURRENCY = 4_096
"""Each rollout in flight holds connections and file descriptors on this machine and the gyms."""


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
            raise UsageError(
                f"task {key[2]!r} ({key[1]}, {key[0]}) is given twice; every task "
                "of a run needs its own id (results are keyed by it)"
            )
        seen[key] = task


async def run_evaluation(
    tasks: Sequence[Task],
    settings: ModelSettings,
    out_dir: str | os.PathLike[str],
    *,
    plan: EvaluationPlan | None = None,
    directory: GymDirectory | None = None,
    options: RolloutOptions | None = None,
    progress: RunProgress | None = None,
    on_record: Callable[[Mapping[str, Any]], None] | None = None,
    **deprecated: Unpack[EvaluationPlanKeywords],
) -> RunReport:
    """Evaluate ``settings.model`` on ``tasks`` x ``plan.repeats``; resumes what ``out_dir``
    holds.

    ``plan`` (:class:`EvaluationPlan`) says how much and how: repeats, concurrency, the judge's
    model, the endpoint check, the outage stop and Ray sharding; its fields as keywords
    (0.2's spelling) still work with a ``DeprecationWarning``.
    ``options.judge`` defaults to the same model endpoint at temperature 0.0
    (``plan.judge_model`` names another model on it), as upstream judges with the agent's
    client. ``plan.ray_address`` shards the rollouts over Ray actors (``docs/run.md``); records
    still stream back to this one writer, so the output is the same as a local run's.
    ``plan.preflight`` checks the endpoint first; ``plan.max_consecutive_unreachable`` (None:
    never) stops the run after that many ``model_unreachable`` rollouts in a row.
    """
    the_plan = plan_from_keywords(plan, deprecated)
    repeats, concurrency = the_plan.repeats, the_plan.concurrency
    judge_model, preflight = the_plan.judge_model, the_plan.preflight
    max_consecutive_unreachable = the_plan.max_consecutive_unreachable
    ray_address, ray_actors = the_plan.ray_address, the_plan.ray_actors
    _check_plan(tasks, repeats, concurrency, max_consecutive_unreachable)
    if ray_address is not None and options is not None and options.planner is not None:
        raise UsageError(
            f"--orchestrator {options.planner.orchestrator} does not run on Ray yet: drop --ray"
        )
    out = Path(out_dir)
    trace = FolderTrace.before(out, ROLLOUTS_FILE)  # a run that records nothing leaves nothing
    options = options or RolloutOptions()
    rollouts = RolloutLog.open(
        out,
        model=settings.model,
        api=settings.api,
        keep=lambda r: states_present(out, r),
        orchestrator="react" if options.planner is None else options.planner.orchestrator,
    )
    states = StateStore.open(out, options.max_state_bytes)  # under the folder's lock
    by_identity = {rollout_key(task, 0)[:3]: task for task in tasks}
    kept = {
        key: record
        for key, record in rollouts.finished.items()
        if key[3] < repeats and key[:3] in by_identity
    }
    progress = progress if progress is not None else RunProgress()
    progress.total, progress.skipped = len(tasks) * repeats, len(kept)
    pending_count = progress.total - progress.skipped
    new: list[Mapping[str, Any]] = []
    outage = _OutageWatch(max_consecutive_unreachable)

    def schedule() -> Iterator[tuple[Task, int]]:
        for repeat in range(repeats):
            for task in tasks:
                if outage.tripped is not None:
                    return
                if rollout_key(task, repeat) not in kept:
                    # an upstream file without an evaluated record: written before a kill, or
                    # by a try that ended incomplete; it must not count until this one ends
                    stale = upstream_path(
                        out,
                        {
                            "mode": task.mode or "task",
                            "repeat": repeat,
                            "domain": task.domain or "unknown",
                            "task_id": task.task_id or "task",
                        },
                    )
                    stale.unlink(missing_ok=True)
                    yield task, repeat

    work = schedule()
    directory = directory if directory is not None else GymDirectory()

    def started() -> None:
        progress.in_flight += 1

    def finished(task: Task, record: Mapping[str, Any]) -> None:
        progress.in_flight -= 1
        record = dict(record)
        states.store(record)  # first: a record's state files exist before it does
        if record["status"] == "evaluated":  # first: a kill now leaves a rollout to run again
            write_upstream_result(out, task, record, tools_available=record["tools_offered"])
            progress.evaluated += 1
            progress.passed += bool(record["success"])
        else:
            progress.incomplete += 1
        rollouts.append(record)
        progress.done += 1
        new.append(record)
        if on_record is not None:
            on_record(record)
        if (stop := outage.saw(record)) is not None:  # on Ray too: this runs in the driver
            raise stop

    async def worker(
        client: ModelClient, janitor: Janitor, rollout_options: RolloutOptions
    ) -> None:
        for task, repeat in work:
            started()
            try:
                record = await run_rollout(
                    task,
                    repeat,
                    client=client,
                    directory=directory,
                    janitor=janitor,
                    options=rollout_options,
                )
            except BaseException:
                progress.in_flight -= 1
                raise
            finished(task, record)  # raises when the outage stop trips: in-flight ones cancel

    try:
        for key, kept_record in kept.items():  # a kill between the two writes of an old version
            if not upstream_path(out, kept_record).exists():
                write_upstream_result(
                    out,
                    by_identity[key[:3]],
                    kept_record,
                    tools_available=kept_record["tools_offered"],
                )
        if pending_count:  # a missing seed file is found now, not after every rollout failed
            done = Counter(key[:3] for key in kept)
            check_seed_files(
                (t for key, t in by_identity.items() if done[key] < repeats), options.seed_root
            )
        if preflight and pending_count:  # before anything is seeded
            async with ModelClient(settings) as probe:
                log.info("model endpoint: %s", await probe.preflight())
            if options.planner is not None and options.planner.settings is not None:
                async with ModelClient(options.planner.settings) as probe:
                    log.info("planner endpoint: %s", await probe.preflight())
        if ray_address is not None:
            leaks = await run_on_ray(
                list(work),
                settings,
                directory.replicas,
                options,
                address=ray_address,
                concurrency=concurrency,
                num_actors=ray_actors,
                judge_model=judge_model,
                on_start=started,
                on_record=finished,
            )
            for leak in leaks:
                log.error("database left on a gym by a Ray worker: %s", leak)
        else:
            await _run_here(
                settings, directory, options, judge_model, concurrency, pending_count, worker
            )
    finally:
        if not new:
            trace.remove_rollouts()  # under the folder's lock
        rollouts.close()
        if not new:
            trace.remove_folders()
    records: dict[RolloutKey, Mapping[str, Any]] = {**kept}
    for record in new:
        records[(record["mode"], record["domain"], record["task_id"], record["repeat"])] = record
    order = {key: index for index, key in enumerate(by_identity)}
    ordered = tuple(records[key] for key in sorted(records, key=lambda k: (k[3], order[k[:3]])))
    return RunReport(
        out_dir=out, records=ordered, planned=progress.total, skipped=progress.skipped, ran=len(new)
    )


def _check_plan(
    tasks: Sequence[Task], repeats: int, concurrency: int, max_consecutive_unreachable: int | None
) -> None:
    if not tasks:
        raise UsageError("no tasks to run (the task paths held none)")
    for name, value, most in (
        ("repeats", repeats, MAX_REPEATS),
        ("concurrency", concurrency, MAX_CONCURRENCY),
    ):
        if not 1 <= value <= most:
            raise UsageError(f"{name} must be between 1 and {most:,}, got {value}")
    if max_consecutive_unreachable is not None and max_consecutive_unreachable < 1:
        raise UsageError(
            "max_consecutive_unreachable must be at least 1 (or None), got "
            f"{max_consecutive_unreachable}"
        )
    _check_unique(tasks)


@attrs.define
class _OutageWatch:
    """Counts rollouts in a row that found the model unreachable; trips at ``limit``."""

    limit: int | None
    in_a_row: int = 0
    tripped: ModelOutageError | None = None

    def saw(self, record: Mapping[str, Any]) -> ModelOutageError | None:
        """Count ``record``; the error to stop with when this one trips the stop."""
        if record.get("failure_kind") != "model_unreachable":
            self.in_a_row = 0
            return None
        self.in_a_row += 1
        if self.limit is not None and self.in_a_row >= self.limit and self.tripped is None:
            self.tripped = ModelOutageError(
                f"{self.in_a_row} rollouts in a row found the model endpoint unreachable; the run "
                f"stopped taking work (last: {record.get('failure_reason')}); rerun the same "
                "command to resume",
                rollouts=self.in_a_row,
            )
            return self.tripped
        return None


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error a caller should see from a task group: the first that is not a cancellation,
    EogErrors first, nested groups opened."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        item = stack.pop(0)
        if isinstance(item, BaseExceptionGroup):
            stack[:0] = list(item.exceptions)
        elif not isinstance(item, asyncio.CancelledError):
            leaves.append(item)
    return next((e for e in leaves if isinstance(e, EogError)), leaves[0] if leaves else group)


async def _run_here(
    settings: ModelSettings,
    directory: GymDirectory,
    options: RolloutOptions,
    judge_model: str | None,
    concurrency: int,
    pending: int,
    worker: Callable[[ModelClient, Janitor, RolloutOptions], Any],
) -> None:
    """The local run: ``concurrency`` workers on this event loop."""
    # The directory holds the connection pool, and with it one MCP session per gym
    # replica shared by every rollout; the janitor finishes failed deletions first.
    async with (
        ModelClient(settings) as client,
        directory,
        Janitor(timeouts=options.timeouts) as janitor,
    ):
        if options.judge is None:
            options = attrs.evolve(options, judge=ModelJudge(client, judge_model))
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(concurrency, pending)):
                    group.create_task(worker(client, janitor, options))
        except BaseExceptionGroup as errors:  # the typed error, not a group of them
            raise _first_error(errors) from None
        finally:
            if options.planner is not None:
                await options.planner.aclose()
