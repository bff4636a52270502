"""LocalGym: an embedded gym server with the surface of an EOG gym container.

REST on SQLite (seed, SQL runner, delete, health) plus an MCP endpoint, on one
aiohttp application; fault knobs and counters let tests provoke and observe the
failures real gyms show.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import attrs
from aiohttp import web

from eog_core._sqlguard import READ_ONLY_HEADER
from eog_core._version import __version__
from eog_core.verify import GYM_IMPLICIT_LIMIT, apply_implicit_limit

from ._databases import DatabaseExistsError, DatabaseStore, QueryInterrupted, run_sql
from ._faults import Counters, DropMoment, FaultPlan, drop_connection
from ._ledger import Ledger
from ._mcp import McpEndpoint, ResponseMode
from ._rest import detail_answer, dumps, json_object
from ._thread import run_in_thread
from ._tools import ToolFunction, ToolRegistry
from .demo import DEMO_SERVER_NAME, DEMO_SERVER_PORT, build_demo_tools

__all__ = ["LocalGym", "serve"]

_F = TypeVar("_F", bound=ToolFunction)
_log = logging.getLogger(__name__)
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SERVER_VERSION = __version__
MAX_BODY_BYTES = 512 * 1024 * 1024


@attrs.define(kw_only=True)
class LocalGym:
    """An aiohttp gym server on loopback; ``async with LocalGym() as gym: gym.url``.

    ``port=0`` picks a free port. Databases live in memory until deleted or the
    gym stops. ``response_mode`` picks plain JSON or SSE answers on the MCP path;
    in SSE mode ``sse_noise`` prefixes each answer with a comment and a log
    notification so clients are exercised on picking the response by id.
    ``journal`` names a file to which the :attr:`ledger` appends every seed,
    delete and tool execution, so a gym in a killed process can still be audited.
    ``/api/sql-runner`` queries run off the event loop and are interrupted
    after ``sql_timeout`` seconds (HTTP 400), so a runaway query never stalls
    the gym; with the ``x-eog-read-only`` header they run under SQLite's
    authorizer and cannot write. As a real gym's, the SQL runner appends `` LIMIT
    100`` to a query whose outermost SELECT has no LIMIT of its own
    (:func:`eog_core.verify.apply_implicit_limit`) and echoes the query as run
    (``{"data": [...], "query": ...}``); ``implicit_limit=None`` answers every row.
    """

    _name: str = "local-gym"
    _host: str = "127.0.0.1"
    _port: int = 0
    _mcp_path: str = "/mcp"
    _response_mode: ResponseMode = "json"
    _sse_noise: bool = True
    _sql_timeout: float | None = 30.0
    _implicit_limit: int | None = GYM_IMPLICIT_LIMIT
    _tools: ToolRegistry = attrs.field(factory=ToolRegistry)
    _journal: str | os.PathLike[str] | None = None
    _ledger: Ledger = attrs.field(init=False)
    _databases: DatabaseStore = attrs.field(factory=DatabaseStore, init=False)
    _faults: FaultPlan = attrs.field(factory=FaultPlan, init=False)
    _counters: Counters = attrs.field(factory=Counters, init=False)
    _endpoint: McpEndpoint = attrs.field(init=False)
    _runner: web.AppRunner | None = attrs.field(default=None, init=False)
    _bound_port: int | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if self._response_mode not in ("json", "sse"):
            raise ValueError(f"response_mode must be 'json' or 'sse', not {self._response_mode!r}")
        if not self._mcp_path.startswith("/"):
            raise ValueError("mcp_path must start with '/'")
        self._ledger = Ledger(self._journal)
        if self._sql_timeout is not None and not self._sql_timeout > 0:
            raise ValueError("sql_timeout must be a positive number of seconds or None")
        limit = self._implicit_limit
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ValueError(
                f"implicit_limit must be a whole number of rows or None, not {limit!r}"
            )
        self._endpoint = McpEndpoint(
            server_name=self._name,
            server_version=SERVER_VERSION,
            tools=self._tools,
            databases=self._databases,
            faults=self._faults,
            counters=self._counters,
            ledger=self._ledger,
            response_mode=self._response_mode,
            sse_noise=self._sse_noise,
        )

    @classmethod
    def demo(cls, **options: Any) -> LocalGym:
        """A gym named ``demo-csm-server`` serving the demo CSM tools."""
        options.setdefault("name", DEMO_SERVER_NAME)
        return cls(tools=build_demo_tools(), **options)

    # -- identity -----------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def tools(self) -> ToolRegistry:
        return self._tools

    @property
    def mcp_path(self) -> str:
        return self._mcp_path

    @property
    def url(self) -> str:
        """Base URL (no trailing slash); only valid while the gym runs."""
        if self._bound_port is None:
            raise RuntimeError("the gym is not running")
        return f"http://{self._host}:{self._bound_port}"

    @property
    def mcp_url(self) -> str:
        return self.url + self._mcp_path

    def tool(
        self,
        *,
        name: str | None = None,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> Callable[[_F], _F]:
        """Register a tool: ``@gym.tool(name=..., input_schema={...})`` on ``fn(ctx, **args)``."""
        return self._tools.tool(
            name=name, description=description, input_schema=input_schema, title=title
        )

    # -- inspection ---------------------------------------------------------

    def database_ids(self) -> list[str]:
        return self._databases.ids()

    def query(self, database_id: str, sql: str) -> list[dict[str, Any]]:
        """Run SQL directly on a database (test inspection); KeyError if unknown."""
        connection = self._databases.get(database_id)
        if connection is None:
            raise KeyError(database_id)
        return run_sql(connection, sql)

    @property
    def sql_queries_running(self) -> int:
        """SQL-runner queries running right now (in worker threads)."""
        return self._databases.running_queries()

    def session_ids(self) -> list[str]:
        return self._endpoint.session_ids()

    @property
    def request_counts(self) -> dict[str, int]:
        """HTTP requests received per path (faulted ones included)."""
        return dict(self._counters.requests)

    @property
    def method_counts(self) -> dict[str, int]:
        """MCP JSON-RPC messages received per method."""
        return dict(self._counters.methods)

    @property
    def tool_executions(self) -> dict[str, int]:
        """How many times each tool body actually ran."""
        return dict(self._counters.tool_executions)

    @property
    def ledger(self) -> Ledger:
        """The server-side account of seeds, deletes and tool executions (never reset)."""
        return self._ledger

    def reset_counters(self) -> None:
        self._counters.reset()

    # -- fault knobs --------------------------------------------------------

    def set_latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` before handling it (0 turns it off)."""
        if seconds < 0:
            raise ValueError("latency cannot be negative")
        self._faults.latency = seconds

    def fail_next(
        self, count: int = 1, status: int = 503, *, path: str | None = None, detail: str = ""
    ) -> None:
        """Answer the next ``count`` requests (to ``path`` only, if given) with ``status``."""
        self._faults.fail_next(count, status, path=path, detail=detail)

    def drop_next(
        self, count: int = 1, *, path: str | None = None, after_tool_call: bool = False
    ) -> None:
        """Close the connection of the next ``count`` requests without answering.

        With ``after_tool_call`` only MCP tool calls count, and each is dropped
        after its tool ran and committed: the effect happened, the answer is lost.
        """
        moment = DropMoment.AFTER_TOOL_CALL if after_tool_call else DropMoment.BEFORE
        self._faults.drop_next(count, path=path, moment=moment)

    def expire_sessions(self) -> int:
        """End every MCP session; requests with an old id get 404. Returns how many."""
        return self._endpoint.expire_sessions()

    def clear_faults(self) -> None:
        self._faults.clear()

    @property
    def pending_faults(self) -> int:
        return self._faults.pending

    # -- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        """Bind and serve; the chosen port is in :attr:`url`."""
        if self._runner is not None:
            raise RuntimeError("the gym is already running")
        runner = web.AppRunner(self._build_app(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        self._ledger.started()

    async def stop(self) -> None:
        """Stop serving and drop every database and session (idempotent)."""
        runner, self._runner = self._runner, None
        self._bound_port = None
        self._databases.interrupt()  # running SQL-runner queries end now, not at their deadline
        try:
            if runner is not None:
                await runner.cleanup()
            await self._databases.settle()
        finally:
            self._endpoint.expire_sessions()
            self._databases.close()
            if runner is not None:
                self._ledger.stopped()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def run(self, host: str | None = None, port: int | None = None) -> None:
        """Serve in the foreground until interrupted (Ctrl-C)."""
        if host is not None:
            self._host = host
        if port is not None:
            self._port = port
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._serve_forever())

    def run_in_thread(
        self, *, timeout: float = 30.0
    ) -> contextlib.AbstractContextManager[LocalGym]:
        """Serve from a daemon thread with its own event loop: ``with gym.run_in_thread():``.

        For frameworks that own the event loop (inspect's ``eval()``, FastAPI's
        TestClient, a Ray driver). Stops the gym and the thread when the block ends.
        """
        return run_in_thread(self, timeout=timeout)

    async def _serve_forever(self) -> None:
        async with self:
            print(f"{self._name} serving on {self.url} (MCP at {self.mcp_url})", flush=True)
            await asyncio.Event().wait()

    # -- HTTP ---------------------------------------------------------------

    def _build_app(self) -> web.Application:
        @web.middleware
        async def instruments(request: web.Request, handler: _Handler) -> web.StreamResponse:
            self._counters.requests[request.path] += 1
            decision = self._faults.on_request(request.path)
            if decision.delay > 0:
                await asyncio.sleep(decision.delay)
            if decision.fail_status is not None:
                return detail_answer(decision.fail_detail, status=decision.fail_status)
            if decision.drop:
                return drop_connection(request)
            try:
                return await handler(request)
            except ConnectionResetError:  # aiohttp's ClientConnectionResetError included
                # The client went away mid-answer (a cancelled SSE stream): not an error of
                # the gym. The answer below cannot be sent either; aiohttp drops it quietly.
                _log.debug("client went away during %s %s", request.method, request.path)
                return web.Response(status=499, reason="Client Closed Request")

        # Seed dumps of real gyms run to tens of megabytes; aiohttp's default cap is 1 MiB.
        app = web.Application(middlewares=[instruments], client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/health", self._health)
        app.router.add_post("/api/seed-database", self._seed_database)
        app.router.add_post("/api/sql-runner", self._sql_runner)
        app.router.add_delete("/api/delete-database", self._delete_database)
        app.router.add_post(self._mcp_path, self._endpoint.handle_post)
        app.router.add_delete(self._mcp_path, self._endpoint.handle_delete)
        return app

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "status": "ok",
                "name": self._name,
                "version": SERVER_VERSION,
                "databases": len(self._databases),
                "sessions": len(self._endpoint.session_ids()),
                "tools": len(self._tools),
            }
        )

    async def _seed_database(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        if isinstance(body, web.Response):
            return body
        database_id = body.get("database_id")
        sql_content = body.get("sql_content")
        if not isinstance(database_id, str) or not database_id.strip():
            return detail_answer("Missing or invalid field: database_id", status=400)
        if not isinstance(sql_content, str):
            return detail_answer("Missing or invalid field: sql_content", status=400)
        try:
            await self._databases.seed(database_id, sql_content)
        except DatabaseExistsError:
            return detail_answer(f"Database already exists: {database_id}", status=409)
        except (sqlite3.Error, ValueError) as exc:
            return detail_answer(f"Failed to seed database: {exc}", status=400)
        self._ledger.seeded(database_id)
        return web.json_response(
            {"success": True, "database_id": database_id, "message": "Database seeded"}
        )

    async def _sql_runner(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        if isinstance(body, web.Response):
            return body
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return detail_answer("Missing or invalid field: query", status=400)
        database_id = body.get("database_id") or request.headers.get("x-database-id")
        if not isinstance(database_id, str) or not database_id:
            return detail_answer("Missing database_id (body or x-database-id header)", status=400)
        read_only = request.headers.get(READ_ONLY_HEADER, "").strip().lower() in ("1", "true")
        if self._implicit_limit is not None:
            query = apply_implicit_limit(query, self._implicit_limit)
        try:
            rows = await self._databases.run_query(
                database_id, query, read_only=read_only, deadline_s=self._sql_timeout
            )
        except KeyError:
            return detail_answer(f"Database not found: {database_id}", status=404)
        except QueryInterrupted as exc:
            return detail_answer(str(exc), status=400)
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            return detail_answer(str(exc), status=400)
        return web.json_response({"data": rows, "query": query}, dumps=dumps)

    async def _delete_database(self, request: web.Request) -> web.Response:
        body = await json_object(request, allow_empty=True)
        if isinstance(body, web.Response):
            return body
        database_id = body.get("database_id") or request.headers.get("x-database-id")
        if not isinstance(database_id, str) or not database_id:
            return detail_answer("Missing database_id", status=400)
        if not await self._databases.delete_when_idle(database_id):
            return detail_answer(f"Database not found: {database_id}", status=404)
        self._ledger.deleted(database_id)
        return web.json_response(
            {"success": True, "database_id": database_id, "message": "Database deleted"}
        )


def serve(
    host: str = "127.0.0.1",
    port: int = DEMO_SERVER_PORT,
    *,
    domain: str = "demo",
    response_mode: ResponseMode = "json",
    journal: str | os.PathLike[str] | None = None,
) -> None:
    """Run a local gym in the foreground until interrupted (``eog-core serve-local``).

    ``domain="demo"`` serves the demo CSM tools; ``domain="empty"`` a gym without tools.
    ``journal`` appends the gym's ledger (seeds, deletes, tool executions) to a file.
    """
    if domain == "demo":
        gym = LocalGym.demo(host=host, port=port, response_mode=response_mode, journal=journal)
    elif domain == "empty":
        gym = LocalGym(host=host, port=port, response_mode=response_mode, journal=journal)
    else:
        raise ValueError(f"unknown local gym domain {domain!r} (known: demo, empty)")
    gym.run()
