"""One rollout: ``TaskSession.start`` -> agent loop -> verify (strict and parity) -> close.

Infrastructure failures (a gym unreachable or failing, a seed that failed, a
model that gave no usable answer after its retries) retry the whole rollout on
fresh databases; after the last attempt the rollout is recorded as incomplete
with its failure kind, never as a 0. Failures retrying cannot fix (a missing
seed file, a request the model endpoint refuses, a bad task) are recorded at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core._backoff import backoff_delay
from eog_core.errors import (
    EogError,
    GymError,
    GymTimeoutError,
    GymUnreachableError,
    ModelHTTPError,
    ModelUnreachableError,
    SeedError,
    SeedFileError,
    ToolCallParseError,
)
from eog_core.gym import GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.run._decomposing import Decomposer, run_decomposing
from eog_core.run._loop import AgentRun, run_agent
from eog_core.run._model import ModelClient
from eog_core.run._planner import Planner, run_planner_react
from eog_core.run._records import IncompleteKind, evaluated_record, incomplete_record
from eog_core.run._states import DEFAULT_MAX_STATE_BYTES, capture, capture_fields, damage_field
from eog_core.state import DEFAULT_MAX_ROWS, DamageSpec
from eog_core.tasks import GymServer, Task, ToolSnapshot
from eog_core.verify import (
    PARITY,
    STRICT,
    Judge,
    Policy,
    SqlOutcome,
    SqlRunner,
    TaskVerdict,
    implicit_limit_of,
)

__all__ = [
    "RolloutOptions",
    "SharedQueries",
    "check_seed_files",
    "classify_failure",
    "run_rollout",
    "verify_both",
]

log = logging.getLogger("eog_core.run")
ROLLOUT_RETRY_MAX = 60.0
"""The cap on the wait before a whole rollout is tried again (``retry_delay`` doubles)."""

_PLANNER_ENDINGS = {
    "no_plan": "the planner's answer holds no plan (no text)",
    "bad_decomposition": "no answer of the planner held a decomposition upstream would run",
}
"""Endings of the planner's making: the rollout is incomplete and not retried."""


def _planner_reason(agent: AgentRun) -> str:
    errors = (agent.decomposition or {}).get("errors") or ()
    last = f" (the last: {errors[-1]})" if errors else ""
    return _PLANNER_ENDINGS[agent.stop_reason] + last


@attrs.frozen(kw_only=True)
class RolloutOptions:
    """How each rollout runs; shared by every rollout of a run."""

    max_turns: int = 50
    rollout_retries: int = 2
    """Extra attempts of a whole rollout after an infrastructure failure."""
    retry_delay: float = 2.0
    """Seconds before the first whole-rollout retry; doubles each time."""
    seed_root: Path | None = None
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None
    forward_any_tool: bool = False
    raw_schemas: bool = False
    """Show the model the gyms' raw input schemas instead of upstream's cleaned ones."""
    judge: Judge | None = None
    timeouts: Timeouts | None = None
    capture_state: bool = False
    """Snapshot the databases after seeding and before deletion (``docs/state.md``)."""
    max_state_rows: int = DEFAULT_MAX_ROWS
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES
    """The run's compressed states, at most (a rollout past it records the capture skipped)."""
    damage_specs: Mapping[str, DamageSpec] | None = None
    """Task id -> what its rollouts may change, for the damage verdict (with ``capture_state``)."""
    planner: Planner | Decomposer | None = None
    """Run ``planner_react`` (a plan first, then the loop) or ``decomposing`` (subtasks, a
    sub-agent each) instead of the plain ReAct loop."""

    @classmethod
    def build(
        cls, *, seed_root: str | os.PathLike[str] | None = None, **options: Any
    ) -> RolloutOptions:
        return cls(seed_root=None if seed_root is None else Path(seed_root), **options)


def check_seed_files(tasks: Iterable[Task], seed_root: Path | None) -> None:
    """Before the first rollout: every seed file the tasks name is there (each rollout reads
    them again). Raises :class:`SeedFileError` naming the first missing one and how many are."""
    if seed_root is not None and not seed_root.is_dir():
        raise SeedFileError(
            f"the seed root {seed_root} is not a folder (--seed-root: where the tasks' seed "
            "SQL files are)",
            path=str(seed_root),
        )
    missing: dict[Path, tuple[Task, GymServer]] = {}
    for task in tasks:
        for gym in task.gym_servers:
            path = Path(gym.seed_database_file or "")
            if gym.seed_database_file and not path.is_absolute() and seed_root is not None:
                path = seed_root / path
            if not gym.seed_database_file or not path.is_file():
                missing.setdefault(path, (task, gym))
    if missing:
        path, (task, gym) = next(iter(missing.items()))
        if gym.seed_database_file:
            given = "" if seed_root is not None else " (no --seed-root given)"
            what = f"the seed file of gym {gym.name!r} is not found: {path}{given}"
        else:
            what = f"gym {gym.name!r} names no seed_database_file"
        more = f" ({len(missing) - 1} more missing)" if len(missing) > 1 else ""
        raise SeedFileError(
            f"task {task.task_id!r}: {what}{more}; upstream's seed files come from gym_dbs.zip: "
            "eog-core seeds unpack gym_dbs.zip --to DIR, then --seed-root DIR",
            path=str(path),
            gym=gym.name,
        )


def classify_failure(error: EogError) -> tuple[IncompleteKind, bool]:
    """The failure kind of an error that ended a rollout, and whether another attempt may help."""
    if isinstance(error, SeedFileError):
        return "seed_failed", False
    if isinstance(error, SeedError):
        cause = error.__cause__
        unreachable = isinstance(cause, GymUnreachableError | GymTimeoutError)
        return ("gym_unreachable" if unreachable else "seed_failed"), True
    if isinstance(error, GymUnreachableError | GymTimeoutError):
        return "gym_unreachable", True
    if isinstance(error, GymError):
        return "gym_error", True
    if isinstance(error, ToolCallParseError):
        return "malformed_tool_call", False
    if isinstance(error, ModelUnreachableError):
        return "model_unreachable", True
    if isinstance(error, ModelHTTPError):
        return "model_error", False
    return "config_error", False


@attrs.define
class SharedQueries:
    """The strict and parity verdicts of one rollout read the gyms with one set of requests.

    Each distinct query is sent once, asking the gym to refuse writes (as STRICT
    asks). Strict uses that answer; parity uses it when it succeeded (a query
    that succeeds read-only wrote nothing, so it reads what upstream's call
    would) and otherwise sends its own query without the read-only request, as
    upstream does. ``for_policy(policy)`` is the runner to verify with.
    """

    read_only: SqlRunner
    plain: SqlRunner
    _answers: dict[
        tuple[str, str | None, str, tuple[tuple[str, str], ...]], asyncio.Task[SqlOutcome]
    ] = attrs.field(factory=dict)

    def for_policy(self, policy: Policy) -> SqlRunner:
        return _PolicyQueries(self, policy.read_only_sql)

    async def run_sql(
        self,
        gym_name: str,
        database_id: str | None,
        query: str,
        context: Mapping[str, str],
        *,
        read_only: bool,
    ) -> SqlOutcome:
        key = (gym_name, database_id, query, tuple(sorted(context.items())))
        if key not in self._answers:
            self._answers[key] = asyncio.ensure_future(
                self.read_only.run_sql(gym_name, database_id, query, context)
            )
        outcome = await self._answers[key]  # both verdicts are cancelled together, if ever
        if read_only or outcome.success:
            return outcome
        return await self.plain.run_sql(gym_name, database_id, query, context)


@attrs.frozen
class _PolicyQueries:
    shared: SharedQueries
    read_only: bool

    @property
    def implicit_limit(self) -> int | None:
        """The gyms' row cap, as the shared runner declares it (strict flags cut answers)."""
        return implicit_limit_of(self.shared.read_only)

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        return await self.shared.run_sql(
            gym_name, database_id, query, context, read_only=self.read_only
        )


async def _attempt(
    task: Task,
    client: ModelClient,
    directory: GymDirectory,
    janitor: Janitor,
    options: RolloutOptions,
) -> tuple[AgentRun, Any, Any, dict[str, Any]]:
    """One try: seed, loop, verify (not after a malformed tool call: the rollout is recorded
    incomplete with the model's text), delete; with ``capture_state``, a snapshot after
    seeding and one before deletion."""
    async with TaskSession.start(
        task,
        directory=directory,
        seed_root=options.seed_root,
        tool_snapshots=options.tool_snapshots,
        janitor=janitor,
        forward_any_tool=options.forward_any_tool,
        timeouts=options.timeouts,
    ) as session:
        before = await capture(session, options.max_state_rows) if options.capture_state else ""
        if options.planner is None:
            agent = await run_agent(
                session, client, max_turns=options.max_turns, raw_schemas=options.raw_schemas
            )
        else:
            orchestrate = (
                run_decomposing if isinstance(options.planner, Decomposer) else run_planner_react
            )
            agent = await orchestrate(
                session,
                client,
                options.planner,  # type: ignore[arg-type]
                max_turns=options.max_turns,
                raw_schemas=options.raw_schemas,
            )
        if agent.malformed_tool_call is not None or agent.stop_reason in _PLANNER_ENDINGS:
            return agent, None, None, {}
        strict, parity = await verify_both(session, agent.final_answer, options.judge)
        states = {}
        if options.capture_state:
            after = await capture(session, options.max_state_rows)
            states = capture_fields(before, after) | damage_field(
                task, before, after, strict_success=strict.success, specs=options.damage_specs
            )
    return agent, strict, parity, states


async def verify_both(
    session: TaskSession, final_answer: str | None, judge: Judge | None
) -> tuple[TaskVerdict, TaskVerdict]:
    """The strict and parity verdicts of an open session, from one set of verifier queries."""
    shared = SharedQueries(session.sql_runner(read_only=True), session.sql_runner())
    strict, parity = await asyncio.gather(
        *(
            session.verify(
                policy=policy,
                final_response=final_answer,
                judge=judge,
                sql=shared.for_policy(policy),
            )
            for policy in (STRICT, PARITY)
        )
    )
    return strict, parity


async def run_rollout(
    task: Task,
    repeat: int,
    *,
    client: ModelClient,
    directory: GymDirectory,
    janitor: Janitor,
    options: RolloutOptions,
) -> dict[str, Any]:
    """Run, verify and close one rollout; returns its record (evaluated or incomplete).
    A ``planner_react`` record names its orchestrator and planner even when no turn ran."""
    record = await _rollout(
        task, repeat, client=client, directory=directory, janitor=janitor, options=options
    )
    if options.planner is not None:
        record.setdefault("orchestrator", options.planner.orchestrator)
        record["planner"] = options.planner.describe()
    return record


async def _rollout(
    task: Task,
    repeat: int,
    *,
    client: ModelClient,
    directory: GymDirectory,
    janitor: Janitor,
    options: RolloutOptions,
) -> dict[str, Any]:
    model = client.settings.describe()
    started = time.time()
    attempts = 1 + max(0, options.rollout_retries)
    kind: IncompleteKind = "config_error"
    reason = ""
    for attempt in range(1, attempts + 1):
        try:
            agent, strict, parity, states = await _attempt(
                task, client, directory, janitor, options
            )
        except EogError as exc:
            kind, retry = classify_failure(exc)
            reason = f"{type(exc).__name__}: {exc}"
        else:
            if agent.stop_reason in _PLANNER_ENDINGS:  # the planner's doing: no rollout retry
                return incomplete_record(
                    task,
                    repeat,
                    model=model,
                    kind=agent.stop_reason,  # type: ignore[arg-type]
                    reason=_planner_reason(agent),
                    agent=agent,
                    attempts=attempt,
                    started=started,
                    finished=time.time(),
                )
            if agent.malformed_tool_call is not None:  # the model's doing: no whole-rollout retry
                error = agent.malformed_tool_call
                return incomplete_record(
                    task,
                    repeat,
                    model=model,
                    kind="malformed_tool_call",
                    reason=f"{type(error).__name__}: {error}",
                    agent=agent,
                    attempts=attempt,
                    started=started,
                    finished=time.time(),
                )
            if strict.failure_kind != "gym_unreachable" or attempt == attempts:
                return states | evaluated_record(
                    task,
                    repeat,
                    model=model,
                    agent=agent,
                    strict=strict,
                    parity=parity,
                    attempts=attempt,
                    started=started,
                    finished=time.time(),
                )
            kind, retry, reason = (
                "gym_unreachable",
                True,
                "a verifier query could not reach its gym",
            )
        if not retry or attempt == attempts:
            return incomplete_record(
                task,
                repeat,
                model=model,
                kind=kind,
                reason=reason,
                attempts=attempt,
                started=started,
                finished=time.time(),
            )
        delay = backoff_delay(attempt, initial=options.retry_delay, maximum=ROLLOUT_RETRY_MAX)
        log.warning(
            "rollout %s repeat %d: %s (%s); attempt %d of %d in %.1fs",
            task.task_id,
            repeat,
            kind,
            reason,
            attempt + 1,
            attempts,
            delay,
        )
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
