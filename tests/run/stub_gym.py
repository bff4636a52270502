"""A stub gym for the shared-task differential: a real loopback server with an EOG gym's
surface (MCP over Streamable HTTP answering plain JSON, and the REST routes a run uses), whose
tools are a tool snapshot's and whose tool calls only echo.

``tools/list`` answers the snapshot's entries as listed (every key, in order);
``tools/call`` answers a JSON text naming the tool and echoing its arguments (and the same
as ``structuredContent``), or a real gym's error result without ``x-database-id`` or with an
unknown one. ``/api/seed-database`` keeps the id it is given (the SQL is not run),
``/api/delete-database`` forgets it, ``/api/sql-runner`` answers no rows. Reading and checking
a message, the session check and the answers' text are eog_core's MCP server core
(:mod:`eog_core._mcp_server`), as for ``LocalGym``. Every call is kept in :attr:`StubGym.calls`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import attrs
from aiohttp import web

from eog_core._mcp_server import (
    INVALID_PARAMS,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    RpcFailure,
    RpcRefusal,
    check_session,
    dumps,
    initialize_result,
    method_not_found,
    negotiate_version,
    parse_message,
    result_text,
    tool_name,
)
from eog_core.local._rest import detail_answer, json_object

__all__ = ["StubGym", "echo_text"]

MISSING_DATABASE_ID = "Error: x-database-id header is required for database isolation"


def echo_text(name: str, arguments: Mapping[str, Any]) -> str:
    """What a call of ``name`` answers: the tool and its arguments as JSON text."""
    return json.dumps({"tool": name, "arguments": arguments}, sort_keys=True)


@attrs.define
class _Session:
    session_id: str
    protocol_version: str


@attrs.define
class StubGym:
    """``async with StubGym.from_snapshot(path) as gym: gym.url``; one gym, on a free port."""

    name: str
    tools: Sequence[Mapping[str, Any]]
    calls: list[dict[str, Any]] = attrs.field(factory=list)
    """``{"name", "arguments", "database", "user_email"}`` per ``tools/call``, in order;
    ``database`` says whether the id was a seeded database's."""
    databases: set[str] = attrs.field(factory=set)
    seeded: int = 0
    _sessions: dict[str, _Session] = attrs.field(factory=dict)
    _runner: web.AppRunner | None = None
    _port: int | None = None

    @classmethod
    def from_snapshot(cls, path: str | Path) -> StubGym:
        """The gym of a tool snapshot file (``{gym_name, gym_url, snapshot_at, tools}``)."""
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(name=document["gym_name"], tools=document["tools"])

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("the stub gym is not running")
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> Self:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/mcp", self._mcp)
        app.router.add_delete("/mcp", self._end_session)
        app.router.add_post("/api/seed-database", self._seed)
        app.router.add_delete("/api/delete-database", self._delete)
        app.router.add_post("/api/sql-runner", self._sql)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        try:
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _mcp(self, request: web.Request) -> web.Response:
        message = parse_message(await request.read())
        if isinstance(message, RpcRefusal):
            return _refused(message)
        if message is None:
            return web.Response(status=202)
        if message.method == "initialize":
            session = _Session(
                uuid.uuid4().hex, negotiate_version(message.params.get("protocolVersion"))
            )
            self._sessions[session.session_id] = session
            result = initialize_result(
                session.protocol_version, {"name": self.name, "version": "0"}
            )
            return self._answer(result_text(message.request_id, result), session.session_id)
        found = check_session(
            self._sessions,
            request.headers.get(SESSION_HEADER),
            request.headers.get(PROTOCOL_HEADER),
            message.request_id,
        )
        if isinstance(found, RpcRefusal):
            return _refused(found)
        if not message.is_request:
            return web.Response(status=202, headers={SESSION_HEADER: found.session_id})
        answer: Any
        try:
            answer = self._dispatch(request, message.method, message.params)
        except RpcFailure as failure:
            answer = failure
        return self._answer(result_text(message.request_id, answer), found.session_id)

    def _dispatch(self, request: web.Request, method: str, params: dict[str, Any]) -> Any:
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [dict(tool) for tool in self.tools]}
        if method != "tools/call":
            raise method_not_found(method)
        name = tool_name(params)
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RpcFailure(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        database_id = request.headers.get("x-database-id", "").strip()
        self.calls.append(
            {
                "name": name,
                "arguments": arguments,
                "database": database_id in self.databases,
                "user_email": request.headers.get("x-user-email"),
            }
        )
        if not database_id:
            return _result(MISSING_DATABASE_ID, is_error=True)
        if database_id not in self.databases:
            return _result(f"Error: Database not found: {database_id}", is_error=True)
        if name not in {tool["name"] for tool in self.tools}:
            return _result(f"Error: Unknown tool: {name}", is_error=True)
        result = _result(echo_text(name, arguments))
        result["structuredContent"] = {"tool": name, "arguments": arguments}
        return result

    def _answer(self, payload: str, session_id: str) -> web.Response:
        return web.Response(
            text=payload, content_type="application/json", headers={SESSION_HEADER: session_id}
        )

    async def _end_session(self, request: web.Request) -> web.Response:
        self._sessions.pop(request.headers.get(SESSION_HEADER, ""), None)
        return web.Response(status=200)

    async def _seed(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        if isinstance(body, web.Response):
            return body
        database_id = body.get("database_id")
        if not isinstance(database_id, str) or not isinstance(body.get("sql_content"), str):
            return detail_answer("database_id and sql_content are required", status=400)
        self.databases.add(database_id)
        self.seeded += 1
        return web.json_response({"database_id": database_id}, dumps=dumps)

    async def _delete(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        if isinstance(body, web.Response):
            return body
        database_id = body.get("database_id")
        if database_id not in self.databases:
            return detail_answer(f"Database not found: {database_id}", status=404)
        self.databases.discard(database_id)
        return web.json_response({"deleted": database_id}, dumps=dumps)

    async def _sql(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        if isinstance(body, web.Response):
            return body
        return web.json_response({"data": []}, dumps=dumps)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})


def _result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _refused(refusal: RpcRefusal) -> web.Response:
    return web.json_response(refusal.payload(), status=refusal.status, dumps=dumps)
