"""A small aiohttp.web gym whose faults the tests choose: drops, 404 sessions, bad answers."""

from __future__ import annotations

import asyncio
import collections
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
from aiohttp import web

JSON_CT = "application/json"


@attrs.define
class FakeGym:
    """Counts everything it executes; faults are set by the test before the call."""

    port: int = 0
    methods: list[str] = attrs.Factory(list)
    executions: collections.Counter[str] = attrs.Factory(collections.Counter)
    headers_seen: list[dict[str, str]] = attrs.Factory(list)
    sessions: list[str] = attrs.Factory(list)
    expired: set[str] = attrs.Factory(set)
    expired_status: int = 404
    expired_detail: str = "Session not found"
    expire_new_sessions: bool = False
    drop_tools_list: int = 0
    unavailable: int = 0
    mcp_delete_status: int = 200
    delete_headers: list[dict[str, str]] = attrs.Factory(list)
    answer_version: str | None = None
    health_status: int = 200
    seed_release: asyncio.Event | None = None
    seeds_received: int = 0
    seeds_in_flight: int = 0
    max_seeds_in_flight: int = 0
    delete_supported: bool = True
    seeded: dict[str, dict[str, Any]] = attrs.Factory(dict)
    seed_delay: float = 0.0
    """Seconds the gym takes to load a dump (it keeps loading if the client goes away)."""
    seed_answer: int | str | None = None
    """Answer a seed at once with this status (or ``"drop"``) while it still loads."""
    missing_status: int = 400
    """The status of deleting a database the gym does not hold (LocalGym and EOG: 404)."""
    loading: set[asyncio.Task[None]] = attrs.Factory(set)
    initialize_gate: asyncio.Event | None = None
    """``initialize`` waits for this event (a hanging gym until the test sets it)."""
    initialize_status: int | None = None
    """Answer ``initialize`` with this HTTP status (after the gate)."""
    initialized_gate: asyncio.Event | None = None
    """``notifications/initialized`` waits for this event."""
    fixed_session_id: str | None = None
    """Hand out this session id on every ``initialize`` (some servers reuse ids)."""
    list_gate: asyncio.Event | None = None
    """``tools/list`` waits for this event."""
    call_gate: asyncio.Event = attrs.Factory(asyncio.Event)
    """The tool ``wait`` runs until the test sets this event."""
    sql_seen: list[tuple[str, Any, str | None]] = attrs.Factory(list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/mcp", self._mcp)
        app.router.add_delete("/mcp", self._mcp_delete)
        app.router.add_post("/api/sql-runner", self._sql)
        app.router.add_post("/api/seed-database", self._seed)
        app.router.add_delete("/api/delete-database", self._delete)
        app.router.add_get("/health", self._health)
        return app

    async def _mcp(self, request: web.Request) -> web.StreamResponse:
        message = await request.json()
        method = message.get("method", "")
        self.methods.append(method)
        self.headers_seen.append(dict(request.headers))
        session = request.headers.get("mcp-session-id")
        if self.unavailable:
            self.unavailable -= 1
            return web.json_response({"detail": "warming up"}, status=503)
        if session in self.expired and method != "notifications/initialized":
            return web.json_response({"detail": self.expired_detail}, status=self.expired_status)
        if method == "initialize":
            if self.initialize_gate is not None:
                await self.initialize_gate.wait()
            if self.initialize_status is not None:
                return web.json_response({"detail": "cannot"}, status=self.initialize_status)
            session = self.fixed_session_id or uuid.uuid4().hex
            self.sessions.append(session)
            if self.expire_new_sessions:
                self.expired.add(session)
            result = {
                "protocolVersion": self.answer_version or message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "0"},
            }
            return _answer(message, result, headers={"mcp-session-id": session})
        if method == "notifications/initialized":
            if self.initialized_gate is not None:
                await self.initialized_gate.wait()
            return web.Response(status=202)
        if method == "tools/list":
            if self.list_gate is not None:
                await self.list_gate.wait()
            if self.drop_tools_list:
                self.drop_tools_list -= 1
                return _drop(request)
            cursor = message.get("params", {}).get("cursor")
            page = int(cursor or 0)
            result = {"tools": [{"name": f"tool_{page}", "inputSchema": {"type": "object"}}]}
            if page < 2:
                result["nextCursor"] = str(page + 1)
            return _answer(message, result)
        if method == "tools/call":
            return await self._call(request, message)
        return _answer(message, error={"code": -32601, "message": f"no method {method}"})

    async def _call(self, request: web.Request, message: dict[str, Any]) -> web.StreamResponse:
        name = message["params"]["name"]
        self.executions[name] += 1
        ok = {"content": [{"type": "text", "text": f"ran {name}"}], "isError": False}
        if name == "drop":
            return _drop(request)
        if name == "wait":
            await self.call_gate.wait()
        if name == "session_400":  # ran, then a 400 naming the session (not a 404)
            return web.json_response({"detail": "Bad Request: session state lost"}, status=400)
        if name == "http500":
            return web.json_response({"message": "boom"}, status=500)
        if name == "unavailable":
            return web.json_response({"detail": "busy"}, status=503)
        if name == "bad_json":
            return web.Response(text="{not json", content_type=JSON_CT)
        if name == "rpc_error":
            error = {"code": -32602, "message": "bad params", "data": {"field": "x"}}
            return _answer(message, error=error)
        if name == "wrong_id":
            return web.json_response({"jsonrpc": "2.0", "id": 999_999, "result": ok})
        if name in ("sse", "sse_without_answer"):
            return await _sse(request, message, ok, include_answer=name == "sse")
        return _answer(message, ok)

    async def _mcp_delete(self, request: web.Request) -> web.Response:
        self.methods.append("DELETE")
        self.delete_headers.append(dict(request.headers))
        return web.json_response({"detail": "nope"}, status=self.mcp_delete_status)

    async def _sql(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.sql_seen.append(
            (body["query"], body["database_id"], request.headers.get("x-database-id"))
        )
        if "missing" in body["query"]:
            return web.json_response({"detail": "no such table: missing"}, status=400)
        if "crash" in body["query"]:
            return web.Response(text="Internal Server Error", status=500)
        return web.json_response({"data": [{"n": 1}]})

    async def _seed(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seeds_received += 1

        async def load() -> None:
            self.seeds_in_flight += 1
            self.max_seeds_in_flight = max(self.max_seeds_in_flight, self.seeds_in_flight)
            try:
                if self.seed_release is not None:
                    await self.seed_release.wait()
                await asyncio.sleep(self.seed_delay)
            finally:
                self.seeds_in_flight -= 1
            self.seeded[body["database_id"]] = body

        loading = asyncio.ensure_future(load())  # not cancelled when the client goes away
        self.loading.add(loading)
        loading.add_done_callback(self.loading.discard)
        if self.seed_answer == "drop":
            return _drop(request)
        if isinstance(self.seed_answer, int):
            return web.json_response({"detail": "gateway timeout"}, status=self.seed_answer)
        await asyncio.shield(loading)
        return web.json_response({"ok": True})

    async def _delete(self, request: web.Request) -> web.Response:
        if not self.delete_supported:
            return web.json_response({"detail": "Method Not Allowed"}, status=405)
        body = await request.json()
        if self.seeded.pop(body["database_id"], None) is None:
            return web.json_response({"detail": "unknown database"}, status=self.missing_status)
        return web.json_response({"deleted": True})

    async def _health(self, request: web.Request) -> web.Response:
        if self.health_status != 200:
            return web.json_response({"detail": "Not Found"}, status=self.health_status)
        return web.json_response({"status": "ok"})


def _answer(
    message: dict[str, Any],
    result: Any = None,
    *,
    error: Any = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return web.json_response(body, headers=headers)


def _drop(request: web.Request) -> web.Response:
    """Cut the connection after the request was read, before any answer."""
    assert request.transport is not None
    request.transport.abort()
    return web.Response()


async def _sse(
    request: web.Request, message: dict[str, Any], result: Any, *, include_answer: bool
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}
    await response.write(b": ping\r\n\r\nevent: message\r\ndata: " + json.dumps(note).encode())
    await response.write(b"\r\n\r\n")
    other = {"jsonrpc": "2.0", "id": "someone-else", "result": {}}
    await response.write(f"data: {json.dumps(other)}\n\n".encode())
    if include_answer:
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        half = len(answer) // 2
        await response.write(f"data: {answer[:half]}".encode())
        await response.write(f"{answer[half:]}\r\n\r\n".encode())
    await response.write_eof()
    return response


@asynccontextmanager
async def running(gym: FakeGym) -> AsyncIterator[FakeGym]:
    runner = web.AppRunner(gym.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    gym.port = runner.addresses[0][1]
    try:
        yield gym
    finally:
        for loading in list(gym.loading):
            loading.cancel()
        for gate in (gym.initialize_gate, gym.initialized_gate, gym.list_gate, gym.call_gate):
            if gate is not None:
                gate.set()  # no handler left waiting when the server stops
        await runner.cleanup()
