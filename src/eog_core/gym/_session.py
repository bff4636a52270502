"""One rollout of one task: seeded databases, routed tool calls, verification, cleanup.

``async with TaskSession.start(task, seed_root=...) as session:`` seeds one
database per gym concurrently; a failed seed deletes the ones that succeeded
and raises :class:`SeedError`. Closing deletes every database; one whose
deletion fails goes to a :class:`Janitor`, which retries and reports it.
Taking over a session seeded elsewhere is :mod:`eog_core.gym._attach`.
"""

from __future__ import annotations

import asyncio
import os
import time
import warnings
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from eog_core._json import unsendable
from eog_core.errors import ClosedError, EogError
from eog_core.gym._attach import attach_gyms
from eog_core.gym._client import GymClient
from eog_core.gym._directory import GymDirectory, default_directory
from eog_core.gym._handle import SessionHandle
from eog_core.gym._headers import HeaderMode
from eog_core.gym._janitor import Janitor, default_janitor
from eog_core.gym._records import DEFAULT_TIMEOUTS, Timeouts, ToolResult
from eog_core.gym._seeding import seed_task
from eog_core.gym._sql import HttpSqlRunner
from eog_core.gym._start import SessionStart
from eog_core.gym._state import State, warn_unclosed
from eog_core.gym._teardown import Teardown
from eog_core.gym._tool_calls import (
    ToolCallRecord,
    failure_record,
    gym_error_kind,
    local_error,
    local_record,
    new_call_record,
    read_arguments,
)
from eog_core.gym._transport import Transport
from eog_core.tasks import Task, ToolSet, ToolSnapshot, task_record
from eog_core.verify import (
    DEFAULT_JUDGE_PROMPT,
    STRICT,
    Judge,
    JudgePrompt,
    Policy,
    SqlRunner,
    TaskVerdict,
    ToolLatency,
    verify_task,
)

__all__ = ["TaskSession", "ToolErrors"]

ToolErrors = Literal["raise", "result"]
"""What :meth:`TaskSession.call_tool` does with a gym failure: raise it, or answer an
``is_error`` result (recorded with its kind) so an agent loop carries on."""


@attrs.define
class TaskSession:
    """A task's live rollout. Build it with :meth:`start`, never directly."""

    task: Task
    tools: ToolSet
    database_ids: Mapping[str, str]
    trajectory: list[ToolCallRecord]
    _clients: dict[str, GymClient] = attrs.field(repr=False)
    _teardown: Teardown = attrs.field(repr=False)
    _janitor: Janitor = attrs.field(repr=False)
    _owners: Mapping[str, str] = attrs.field(repr=False)
    _forward_any_tool: bool = False
    _state: State = attrs.field(default=State.OPEN, repr=False)
    _closed_event: asyncio.Event | None = attrs.field(default=None, repr=False)
    """Set once closing has finished (a second closer waits for it)."""
    _in_flight: int = attrs.field(default=0, repr=False)
    _tool_errors: ToolErrors = "raise"
    _keep: set[str] = attrs.field(factory=set, repr=False)
    """Gyms whose database closing must not delete (handed off by :meth:`detach`)."""
    last_activity: float = attrs.field(factory=time.monotonic)
    _routes: dict[str, tuple[GymClient, str, Mapping[str, Any]]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    """Per gym: its client, database id and context (filled on first call)."""

    @classmethod
    def start(
        cls,
        task: Task,
        *,
        directory: GymDirectory | None = None,
        seed_root: str | os.PathLike[str] | None = None,
        seed_sql: Mapping[str, str] | None = None,
        tool_snapshots: Mapping[str, ToolSnapshot] | None = None,
        janitor: Janitor | None = None,
        forward_any_tool: bool = False,
        header_mode: HeaderMode = "strict",
        transport: Transport | None = None,
        timeouts: Timeouts | None = None,
        own_mcp: bool | Collection[str] = False,
        tool_errors: ToolErrors = "raise",
        session_per_database: bool | Collection[str] | None = None,
    ) -> SessionStart[TaskSession]:
        """Seed the task's databases and connect; use with ``async with`` or ``await``.

        Seed SQL comes from ``seed_sql[gym]`` or the gym's ``seed_database_file``
        under ``seed_root``. Tools come from ``tool_snapshots`` or are listed live
        (once per replica and event loop: the list is cached with the MCP session).
        Every task session talks to a replica through the one MCP session shared
        on this event loop (the database travels in each call's header); for a
        gym that binds its database to the MCP session, ``own_mcp`` (True, or a
        collection of gym names) gives each task its own MCP session, ended when
        the task session closes (``session_per_database``, its old name, is
        deprecated). ``tool_errors="result"`` turns gym failures of
        :meth:`call_tool` into ``is_error`` results (see :data:`ToolErrors`).
        """
        if session_per_database is not None:
            warnings.warn(
                "TaskSession.start(session_per_database=...) is deprecated: write own_mcp=...",
                DeprecationWarning,
                stacklevel=2,
            )
            own_mcp = session_per_database

        async def open_session() -> TaskSession:
            chosen = janitor or default_janitor()
            seeded = await seed_task(
                task,
                directory=directory or default_directory(),
                seed_root=None if seed_root is None else Path(seed_root),
                seed_sql=seed_sql or {},
                tool_snapshots=tool_snapshots,
                janitor=chosen,
                header_mode=header_mode,
                transport=transport,
                timeouts=timeouts or DEFAULT_TIMEOUTS,
                own_mcp=own_mcp,
            )
            session = cls(
                task=task,
                tools=seeded.tools,
                database_ids=seeded.database_ids,
                trajectory=[],
                clients=seeded.clients,
                teardown=seeded.teardown,
                janitor=chosen,
                owners=seeded.owners,
                forward_any_tool=forward_any_tool,
                tool_errors=tool_errors,
                keep=seeded.teardown.keep,
            )
            chosen.register(session)
            return session

        return SessionStart(open_session)

    @property
    def closed(self) -> bool:
        """Closing has begun (tool calls and verification are refused from then on)."""
        return self._state is not State.OPEN

    @property
    def busy(self) -> bool:
        """A tool call or verification is in flight (the janitor never reaps a busy session)."""
        return self._in_flight > 0

    def gym_urls(self) -> dict[str, str]:
        """Gym name -> base URL of the replica this session's database lives on."""
        return {name: client.base_url for name, client in self._clients.items()}

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ToolResult:
        """Call a tool on the gym that owns it, with that gym's database and context.

        A tool outside the task's set (or arguments that are not a JSON object, or
        that hold what no JSON text may: nesting past 100 levels, an unpaired
        surrogate, an integer past the digit limit, whether given as a string or
        a mapping) is answered here with an ``is_error`` result and never reaches a gym, unless
        the session was started with ``forward_any_tool=True`` (upstream's way).
        Gym failures are recorded in :attr:`trajectory` with their kind, then raised,
        or answered as an ``is_error`` result when the session was started with
        ``tool_errors="result"``; a call cancelled once sent is recorded with
        ``cancelled=True`` (it may have run).
        """
        self._check_open()
        started = time.perf_counter()
        if type(arguments) is not dict:  # a dict (the usual) needs no reading
            read = read_arguments(arguments)
            if isinstance(read, str):
                return self._answer_locally(name, {}, read)
            arguments = read
        arguments = dict(arguments or ())
        if (hostile := unsendable(arguments)) is not None:  # as the same content in a string
            return self._answer_locally(
                name, {}, f"Error: arguments are not valid JSON ({hostile})"
            )
        tool = self.tools.get(name)
        if tool is not None and tool.gym is not None:
            gym_name = tool.gym
        elif not self._forward_any_tool:
            return self._answer_locally(
                name, arguments, f"Error: tool '{name}' is not available in this task"
            )
        else:
            gym_name = self._owners.get(name) or self.task.gym_servers[0].name
        route = self._routes.get(gym_name)
        if route is None:
            gym = self.task.gym(gym_name)
            route = self._routes[gym_name] = (
                self._clients[gym_name],
                self.database_ids[gym_name],
                gym.context if gym else {},
            )
        client, database_id, context = route
        self._in_flight += 1
        try:
            result = await client.call_tool(
                name, arguments, database_id=database_id, context=context
            )
        except EogError as exc:
            self._record_failure(
                name, arguments, gym_name, started, str(exc), error_kind=gym_error_kind(exc)
            )
            if self._tool_errors == "raise" or isinstance(exc, ClosedError):
                raise
            return local_error(f"Error: {exc}")
        except asyncio.CancelledError:
            self._record_failure(
                name,
                arguments,
                gym_name,
                started,
                "cancelled after it was sent; it may have run",
                cancelled=True,
            )
            raise
        finally:
            self._in_flight -= 1
        now = time.perf_counter()
        self.trajectory.append(
            new_call_record(name, arguments, gym_name, (now - started) * 1000, result.is_error)
        )
        self.last_activity = time.monotonic()
        return result

    def _answer_locally(self, name: str, arguments: Mapping[str, Any], text: str) -> ToolResult:
        self.last_activity = time.monotonic()
        self.trajectory.append(local_record(name, arguments, text))
        return local_error(text)

    def _record_failure(
        self,
        name: str,
        arguments: Mapping[str, Any],
        gym: str,
        started: float,
        error: str,
        *,
        cancelled: bool = False,
        error_kind: str | None = None,
    ) -> None:
        latency = (time.perf_counter() - started) * 1000
        self.trajectory.append(
            failure_record(name, arguments, gym, latency, error, cancelled, error_kind)
        )
        self.last_activity = time.monotonic()

    def sql_runner(self, *, read_only: bool = False) -> SqlRunner:
        """A runner of verifier queries on this rollout's gyms, as :meth:`verify` uses
        (``read_only``: the gym is asked to refuse writes, as STRICT asks)."""
        return HttpSqlRunner(self._clients, read_only=read_only)

    async def verify(
        self,
        *,
        policy: Policy = STRICT,
        final_response: str | None = None,
        judge: Judge | None = None,
        judge_prompt: JudgePrompt = DEFAULT_JUDGE_PROMPT,
        tool_calls: Iterable[Any] | None = None,
        max_concurrency: int = 8,
        sql: SqlRunner | None = None,
    ) -> TaskVerdict:
        """Score the rollout on the gyms' current database state.

        ``sql`` replaces :meth:`sql_runner` (e.g. a wrapper of it that shares the
        queries of two policies' verdicts).
        """
        self._check_open()
        self.last_activity = time.monotonic()
        calls = (
            tool_calls
            if tool_calls is not None
            else [r.name for r in self.trajectory if not r.local]
        )  # refused calls never ran
        self._in_flight += 1
        try:
            verdict = await verify_task(
                self.task,
                sql=sql if sql is not None else self.sql_runner(read_only=policy.read_only_sql),
                policy=policy,
                database_ids=self.database_ids,
                final_response=final_response,
                tool_calls=calls,
                judge=judge,
                judge_prompt=judge_prompt,
                max_concurrency=max_concurrency,
                tool_latencies_ms=self.tool_latencies(),
            )
        finally:
            self._in_flight -= 1
            self.last_activity = time.monotonic()
        return verdict

    def tool_latencies(self) -> tuple[ToolLatency, ...]:
        """Each tool call that went to a gym, in order, with its latency (as NeMo Gym reports)."""
        return tuple(
            ToolLatency(tool=r.name, gym=r.gym, latency_ms=r.latency_ms)
            for r in self.trajectory
            if not r.local
        )

    async def aclose(self) -> None:
        """Delete every database, close the clients, release the replicas. Idempotent.

        A second caller (the janitor reaping, say) waits until the first has finished.
        """
        if self._closed_event is not None:
            await self._closed_event.wait()
            return
        self._state = State.CLOSING
        self._closed_event = asyncio.Event()
        try:
            await self._teardown.run()
        finally:
            self._janitor.forget(self)
            self._state = State.CLOSED
            self._closed_event.set()

    def handle(self) -> SessionHandle:
        """This session as plain data, for :meth:`attach` in another worker, process or loop."""
        tools = tuple(
            {
                "name": t.name,
                "description": t.description,
                "inputSchema": dict(t.input_schema),
                "gym": t.gym,
            }
            for t in self.tools.tools
        )
        return SessionHandle(
            task=task_record(self.task),
            gym_urls=self.gym_urls(),
            database_ids=dict(self.database_ids),
            tools=tools,
        )

    @classmethod
    def attach(cls, handle: SessionHandle, **options: Any) -> SessionStart[TaskSession]:
        """Take over a session seeded elsewhere, from its :meth:`handle`; nothing is seeded.

        Use with ``async with`` or ``await``. The attached session calls tools,
        verifies and, on close, deletes the databases (unless the handle says
        otherwise); options are those of :meth:`start` that concern talking to
        gyms (``janitor``, ``transport``, ``timeouts``, ``header_mode``,
        ``tool_errors``, ``forward_any_tool``).
        """
        return SessionStart(lambda: cls._attached(handle, **options))

    @classmethod
    async def _attached(
        cls,
        handle: SessionHandle,
        *,
        janitor: Janitor | None = None,
        transport: Transport | None = None,
        timeouts: Timeouts | None = None,
        header_mode: HeaderMode = "strict",
        tool_errors: ToolErrors = "raise",
        forward_any_tool: bool = False,
    ) -> TaskSession:
        janitor = janitor or default_janitor()
        parts = await attach_gyms(
            handle,
            janitor=janitor,
            transport=transport,
            timeouts=timeouts or DEFAULT_TIMEOUTS,
            header_mode=header_mode,
        )
        session = cls(
            task=parts.task,
            tools=ToolSet(tools=parts.tools),
            database_ids=parts.database_ids,
            trajectory=[],
            clients=parts.clients,
            teardown=parts.teardown,
            janitor=janitor,
            owners={t.name: t.gym or "" for t in parts.tools},
            forward_any_tool=forward_any_tool,
            tool_errors=tool_errors,
            keep=parts.keep,
        )
        janitor.register(session)
        return session

    async def detach(self) -> SessionHandle:
        """Hand the session off: close the clients here, keep the databases, return the handle."""
        self._check_open()
        handle = self.handle()
        self._keep.update(self.database_ids)
        await self.aclose()
        return handle

    async def __aenter__(self) -> TaskSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if getattr(self, "_state", None) is State.OPEN:
            warn_unclosed(
                self,
                f"TaskSession of task {self.task.task_id!r}",
                "its databases were not deleted; use `async with "
                "TaskSession.start(...)` or `await session.aclose()`",
            )

    def _check_open(self) -> None:
        if self._state is not State.OPEN:
            raise ClosedError(f"task session of {self.task.task_id!r} is closed")
