"""The gateway: a run's tasks as scored MCP endpoints, behind a small control API.

``POST /rollouts`` seeds a task's databases and answers the rollout's MCP URL
and prompts; the agent works through ``/rollouts/{id}/mcp``; ``POST
/rollouts/{id}/finish`` verifies (strict and parity from one set of queries),
deletes the databases and records the rollout as ``eog-core run`` does;
``DELETE /rollouts/{id}`` (or ``rollout_ttl`` seconds without a request)
abandons it. Only those routes exist: nothing of a gym (its URL, database ids,
seed SQL, SQL runner) is reachable through the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core._http1 import Limits
from eog_core.errors import EogError, UsageError
from eog_core.gateway._access import Admission, http_error, is_loopback
from eog_core.gateway._control import ControlApi
from eog_core.gateway._http import HttpServer
from eog_core.gateway._mcp import McpHandler
from eog_core.gateway._plan import RunPlan
from eog_core.gateway._rollout import MAX_CALLS_PER_ROLLOUT, GatewayRollout
from eog_core.gym import GymDirectory, Janitor, LeanTransport, TaskSession, Timeouts, Transport
from eog_core.run import (
    ROLLOUTS_FILE,
    FolderTrace,
    RolloutLog,
    StateCapture,
    StateStore,
    capture,
    classify_failure,
    evaluated_record,
    incomplete_record,
    rollout_key,
    states_present,
    verify_both,
    write_upstream_result,
)
from eog_core.tasks import Task, ToolSnapshot
from eog_core.verify import Judge

__all__ = ["Gateway"]

log = logging.getLogger("eog_core.gateway")

DEFAULT_MODEL_LABEL = "mcp-gateway"
MAX_REQUEST_BYTES = Limits().max_request_body
MAX_CONNECTIONS = Limits().max_connections
ENDED_KEPT = 65536  # ended rollout ids remembered, to answer late requests with 410
SHUTDOWN_SECONDS = 10.0  # how long closing waits for requests in flight (a finish verifying)


@attrs.define(eq=False)
class Gateway:
    """Serve ``tasks`` x ``repeats`` as MCP endpoints until closed; records go to ``out_dir``.

    Use with ``async with Gateway(...) as gateway:`` in the event loop of your own
    process (an RL worker's, say); ``gateway.url`` is the control API. ``token``
    makes every request need ``Authorization: Bearer <token>``; a non-loopback
    ``host`` needs ``allow_remote=True``.
    """

    tasks: Sequence[Task]
    out_dir: Path = attrs.field(converter=Path)
    directory: GymDirectory = attrs.field(factory=GymDirectory)
    seed_root: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    repeats: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = attrs.field(default=None, repr=False)
    control_token: str | None = attrs.field(default=None, repr=False)
    """When set, the control API needs this token instead of ``token`` (which then guards
    the MCP endpoints only): an agent given ``token`` cannot start, list or end rollouts."""
    rollout_ttl: float | None = None
    finish_tool: bool = False
    judge: Judge | None = None
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None
    timeouts: Timeouts | None = None
    transport: Transport | None = None
    """What the rollouts' sessions send to the gyms with (the caller's: not closed here);
    None: a :class:`~eog_core.gym.LeanTransport` of the gateway's own, closed with it
    (aiohttp's client costs about 400k instructions a tool call more, per hop)."""
    model: str = DEFAULT_MODEL_LABEL
    """The ``model`` field of every record (the run's label: ``score`` and resume key on it)."""
    allow_remote: bool = False
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_calls_per_rollout: int = MAX_CALLS_PER_ROLLOUT
    """A rollout's tool calls running on the gym at once; more queue (docs/gateway.md)."""
    max_connections: int = MAX_CONNECTIONS
    """Client connections held at once; beyond, the one idle longest is closed, or, none
    being idle, the newcomer is answered 503 (docs/gateway.md, "Wire limits")."""
    on_record: Callable[[Mapping[str, Any]], None] | None = None
    capture_state: StateCapture | None = None
    """Snapshot each rollout's databases after seeding and before deletion (docs/state.md)."""
    _rollouts: dict[str, GatewayRollout] = attrs.field(factory=dict, init=False)
    _by_key: dict[str, GatewayRollout] = attrs.field(factory=dict, init=False)
    _ended_keys: dict[str, str] = attrs.field(factory=dict, init=False)
    _ended: dict[str, dict[str, Any]] = attrs.field(factory=dict, init=False)
    """Rollout id -> how it ended (``state``: ``finished``, ``abandoned``; its task, repeat,
    status and reward), to answer late requests clearly and list recent ones."""
    _plan: RunPlan | None = attrs.field(default=None, init=False)
    _log: RolloutLog | None = attrs.field(default=None, init=False)
    _trace: FolderTrace | None = attrs.field(default=None, init=False)
    _states: StateStore | None = attrs.field(default=None, init=False)
    _janitor: Janitor | None = attrs.field(default=None, init=False)
    _own_transport: LeanTransport | None = attrs.field(default=None, init=False)
    _server: HttpServer | None = attrs.field(default=None, init=False)
    _control: ControlApi = attrs.field(
        init=False,
        default=attrs.Factory(
            lambda self: ControlApi(
                self, McpHandler(finish_tool=self.finish_tool, finish=self.finish)
            ),
            takes_self=True,
        ),
    )
    """``Authorization`` values asked for, as bytes: ``mcp`` on the MCP endpoints,
    ``control`` on the rest (none: no token)."""
    _reaper: asyncio.Task[None] | None = attrs.field(default=None, init=False)
    _bound: tuple[str, int] | None = attrs.field(default=None, init=False)
    _done: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)

    # -- lifetime ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Read what an earlier run left, then listen. Raises UsageError on bad settings."""
        if self._server is not None:
            raise UsageError("the gateway is already started")
        if not self.allow_remote and not is_loopback(self.host):
            raise UsageError(
                f"host {self.host!r} is not a loopback address; pass allow_remote=True "
                "(--allow-remote) to expose the gateway, and set a token"
            )
        if self.max_connections < 1:
            raise UsageError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.rollout_ttl is not None and not self.rollout_ttl > 0:
            raise UsageError(f"rollout_ttl must be positive, got {self.rollout_ttl}")
        if self.max_calls_per_rollout < 1:
            raise UsageError(
                f"max_calls_per_rollout must be at least 1, got {self.max_calls_per_rollout}"
            )
        if self.token == "" or self.control_token == "":
            raise UsageError("the token is empty")
        if self.token is not None and self.token == self.control_token:
            raise UsageError("the control token must differ from the MCP token")
        out = self.out_dir
        self._trace = FolderTrace.before(out, ROLLOUTS_FILE)  # recording nothing leaves nothing
        self._log = RolloutLog.open(out, model=self.model, keep=lambda r: states_present(out, r))
        try:
            self._states = StateStore.open(out, (self.capture_state or StateCapture()).max_bytes)
            self._plan = RunPlan.build(self.tasks, self.repeats, self._log.finished)
            if self._plan.complete:
                self._done.set()
            self._janitor = Janitor()
            if self.transport is None:
                self._own_transport = LeanTransport()
            self._server = self._build_server()
            self._bound = await self._server.start(self.host, self.port)
            if self.rollout_ttl is not None:
                self._reaper = asyncio.create_task(self._reap(), name="eog-gateway-ttl")
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop listening (requests in flight finish first), abandon every rollout still out
        (recorded, databases deleted), close the gyms' connections. Idempotent."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        if self._server is not None:
            server, self._server = self._server, None
            await server.aclose(SHUTDOWN_SECONDS)
        for rollout in [r for r in self._rollouts.values() if r.state == "active"]:
            try:
                await self.abandon(rollout, "the gateway stopped")
            except EogError as exc:  # the janitor retries the deletion
                log.warning("abandoning rollout %s: %s", rollout.rollout_id, exc)
        if self._janitor is not None:
            janitor, self._janitor = self._janitor, None
            await janitor.aclose()
        await self.directory.aclose()
        if self._own_transport is not None:  # last: the pool's shared MCP sessions end through it
            transport, self._own_transport = self._own_transport, None
            await transport.aclose()
        if self._log is not None:
            if self._trace is not None:
                self._trace.remove_rollouts()  # under the folder's lock
            self._log.close()
            self._log = None
            if self._trace is not None:
                self._trace.remove_folders()

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def url(self) -> str:
        """The control API's base URL (``http://127.0.0.1:PORT``)."""
        if self._bound is None:
            raise UsageError("the gateway is not started")
        host, port = self._bound
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def plan(self) -> RunPlan:
        if self._plan is None:
            raise UsageError("the gateway is not started")
        return self._plan

    async def wait_done(self) -> None:
        """Wait until every task x repeat of the run is evaluated."""
        await self._done.wait()

    def rollouts(self) -> list[GatewayRollout]:
        """The rollouts out with agents now."""
        return list(self._rollouts.values())

    def ended(self, most: int = 100) -> list[dict[str, Any]]:
        """The ``most`` rollouts that ended last (finished or abandoned), newest last."""
        return list(itertools.islice(reversed(self._ended.values()), most))[::-1]

    # -- rollouts ---------------------------------------------------------------------------

    async def open_rollout(
        self, task_id: str | None = None, repeat: int | None = None
    ) -> GatewayRollout:
        """Seed the next pending task x repeat (or the one asked for); raises WorkRefused or EogError."""
        plan = self.plan
        task, number = plan.claim(task_id, repeat)
        try:
            session = await TaskSession.start(
                task,
                directory=self.directory,
                seed_root=self.seed_root,
                tool_snapshots=self.tool_snapshots,
                janitor=self._janitor,
                timeouts=self.timeouts,
                transport=self.transport or self._own_transport,
            )
            before = None
            if self.capture_state is not None:
                async with contextlib.AsyncExitStack() as stack:
                    stack.push_async_callback(session.aclose)  # unless the capture ends
                    before = await capture(session, self.capture_state.max_rows)
                    stack.pop_all()
        except BaseException:
            plan.release(rollout_key(task, number), evaluated=False)
            raise
        rollout = GatewayRollout(
            rollout_id=secrets.token_urlsafe(18),
            mcp_key=secrets.token_urlsafe(24),
            task=task,
            repeat=number,
            session=session,
            before_state=before,
            max_calls=self.max_calls_per_rollout,
        )
        self._rollouts[rollout.rollout_id] = rollout
        self._by_key[rollout.mcp_key] = rollout
        return rollout

    def find(self, rollout_id: str) -> GatewayRollout | str | None:
        """The live rollout of that id, how it ended (a string), or None for an unknown id."""
        ended = self._ended.get(rollout_id)
        return self._rollouts.get(rollout_id) or (ended["state"] if ended else None)

    def find_by_key(self, mcp_key: str) -> GatewayRollout | str | None:
        """The live rollout whose MCP URL carries ``mcp_key``, how it ended, or None."""
        return self._by_key.get(mcp_key) or self._ended_keys.get(mcp_key)

    async def finish(self, rollout: GatewayRollout, final_answer: str) -> dict[str, Any]:
        """Verify, delete the databases, record; returns the record."""
        self._check_active(rollout)
        rollout.state = "finishing"
        await rollout.settle()
        agent = rollout.agent_run(final_answer, answered=True)
        try:
            try:
                strict, parity = await verify_both(rollout.session, final_answer, self.judge)
                states = await rollout.capture_after(
                    self.capture_state, strict_success=strict.success
                )
            finally:
                await rollout.session.aclose()
        except EogError as exc:
            kind, _ = classify_failure(exc)
            log.warning(
                "rollout %s (%s repeat %d): verification failed: %s",
                rollout.rollout_id,
                rollout.task.task_id,
                rollout.repeat,
                exc,
            )
            record = incomplete_record(
                rollout.task,
                rollout.repeat,
                model=self._model_fields(),
                kind=kind,
                reason=f"{type(exc).__name__}: {exc}",
                attempts=1,
                started=rollout.started,
                finished=time.time(),
                agent=agent,
            )
        else:
            record = states | evaluated_record(
                rollout.task,
                rollout.repeat,
                model=self._model_fields(),
                agent=agent,
                strict=strict,
                parity=parity,
                attempts=1,
                started=rollout.started,
                finished=time.time(),
            )
        return self._end(rollout, "finished", record)

    async def abandon(self, rollout: GatewayRollout, reason: str) -> dict[str, Any]:
        """Record the rollout as incomplete (``abandoned``) and delete its databases, once its
        calls in flight have answered (as :meth:`finish` waits: each is in the record)."""
        self._check_active(rollout)
        rollout.state = "abandoned"
        try:
            await rollout.settle()
            await rollout.session.aclose()
        finally:
            agent = rollout.agent_run(None, answered=False)
            record = incomplete_record(
                rollout.task,
                rollout.repeat,
                model=self._model_fields(),
                kind="abandoned",
                reason=reason,
                attempts=1,
                started=rollout.started,
                finished=time.time(),
                agent=agent,
            )
            self._end(rollout, "abandoned", record)
        return record

    def _check_active(self, rollout: GatewayRollout) -> None:
        if rollout.state != "active":
            raise UsageError(f"rollout {rollout.rollout_id} is {rollout.state}")

    def _model_fields(self) -> dict[str, Any]:
        return {"model": self.model, "api": "mcp"}

    def _end(self, rollout: GatewayRollout, how: str, record: dict[str, Any]) -> dict[str, Any]:
        record |= {
            "rollout_id": rollout.rollout_id,
            "mcp_client": rollout.client_info,
            "refused_tool_calls": rollout.refused,
        }
        self._rollouts.pop(rollout.rollout_id, None)
        self._by_key.pop(rollout.mcp_key, None)
        self._ended_keys[rollout.mcp_key] = how
        if len(self._ended_keys) > ENDED_KEPT:
            del self._ended_keys[next(iter(self._ended_keys))]
        self._ended[rollout.rollout_id] = {
            "rollout_id": rollout.rollout_id,
            "task_id": rollout.task.task_id,
            "repeat": rollout.repeat,
            "state": how,
            "status": record["status"],
            "reward": record["reward"] if record["status"] == "evaluated" else None,
        }
        if len(self._ended) > ENDED_KEPT:  # the oldest ids then answer 404 instead of 410
            del self._ended[next(iter(self._ended))]
        evaluated = record["status"] == "evaluated"
        self.plan.release(rollout_key(rollout.task, rollout.repeat), evaluated=evaluated)
        if self._log is not None and self._states is not None:
            self._states.store(record)  # first: a record's state files exist before it does
            self._log.append(record)
            if evaluated:
                write_upstream_result(
                    self.out_dir, rollout.task, record, tools_available=record["tools_offered"]
                )
        if self.on_record is not None:
            self.on_record(record)
        if self.plan.complete:
            self._done.set()
        return record

    async def _reap(self) -> None:
        assert self.rollout_ttl is not None
        ttl = self.rollout_ttl
        while True:
            await asyncio.sleep(min(ttl / 4, 1.0))
            now = time.monotonic()
            for rollout in list(self._rollouts.values()):
                if (
                    rollout.state == "active"
                    and not rollout.busy
                    and now - rollout.last_activity > ttl
                ):
                    try:
                        await self.abandon(rollout, f"idle for more than {ttl:g} s (rollout TTL)")
                    except (EogError, OSError) as exc:  # the janitor retries the deletion
                        log.warning("abandoning rollout %s: %s", rollout.rollout_id, exc)

    # -- HTTP -------------------------------------------------------------------------------

    def _build_server(self) -> HttpServer:
        """Our own small HTTP/1.1 server (``_http.py``) with one handler (the control API's
        route table) and one admission check (``_access.Admission``) that runs before a request's
        body is read; a handler's failure is answered 500 ``internal_error`` by the server."""
        return HttpServer(
            self._control.route,
            admit=Admission.of(
                token=self.token, control_token=self.control_token, allow_remote=self.allow_remote
            ),
            error=http_error,
            limits=Limits(
                max_request_body=self.max_request_bytes, max_connections=self.max_connections
            ),
        )
