"""A gym on the official SDK's FastMCP (JSON answers) with the EOG REST surface.

The MCP side is FastMCP itself (stateful sessions, ``DELETE /mcp`` ends one);
seed, SQL runner and delete are FastMCP custom routes over in-memory SQLite, as
the EOG containers serve them beside their MCP endpoint. ``RequestLog`` records
every request as the server saw it (HTTP method, path, JSON-RPC method), so
tests can count requests server-side. Used by tests and by the lifecycle
benchmark, which runs it in its own process.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import attrs
from mcp.server.fastmcp import Context, FastMCP
from starlette.requests import Request
from starlette.responses import JSONResponse

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@attrs.define
class RequestLog:
    """Every HTTP request the gym received: ``(method, path, JSON-RPC method or None)``."""

    entries: list[tuple[str, str, str | None]] = attrs.Factory(list)

    def clear(self) -> None:
        self.entries.clear()


def _rpc_method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


def _logging(app: App, log: RequestLog) -> App:
    async def logging_app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        logged = False

        def note() -> None:
            nonlocal logged
            if not logged:
                logged = True
                method = _rpc_method(b"".join(chunks)) if scope["path"] == "/mcp" else None
                log.entries.append((scope["method"], scope["path"], method))

        async def peek() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    note()  # logged before the answer leaves: the client never sees it first
            return message

        try:
            await app(scope, peek, send)
        finally:
            note()

    return logging_app


def build_fastmcp_gym(log: RequestLog | None = None) -> App:
    """The ASGI app; run it with uvicorn (its lifespan starts FastMCP's session manager)."""
    databases: dict[str, sqlite3.Connection] = {}
    server = FastMCP("fastmcp-gym", json_response=True, log_level="WARNING")

    @server.tool()
    async def find_account(name: str, ctx: Context[Any, Any, Any]) -> str:
        """Accounts whose name contains ``name``, in the caller's database."""
        request = ctx.request_context.request
        database_id = request.headers.get("x-database-id", "") if request is not None else ""
        connection = databases.get(database_id)
        if connection is None:
            return json.dumps({"error": f"Database not found: {database_id}"})
        rows = connection.execute(
            "SELECT sys_id, name FROM account WHERE name LIKE ?", (f"%{name}%",)
        ).fetchall()
        return json.dumps([{"sys_id": r[0], "name": r[1]} for r in rows])

    @server.custom_route("/api/seed-database", methods=["POST"])
    async def seed(request: Request) -> JSONResponse:
        body = await request.json()
        database_id = body["database_id"]
        if database_id in databases:
            return JSONResponse({"detail": f"Database already exists: {database_id}"}, 409)
        connection = sqlite3.connect(":memory:")
        connection.executescript(body["sql_content"])
        databases[database_id] = connection
        return JSONResponse({"success": True, "database_id": database_id})

    @server.custom_route("/api/sql-runner", methods=["POST"])
    async def sql_runner(request: Request) -> JSONResponse:
        body = await request.json()
        connection = databases.get(body.get("database_id") or "")
        if connection is None:
            return JSONResponse({"detail": "Database not found"}, 404)
        cursor = connection.execute(body["query"])
        names = [column[0] for column in cursor.description or ()]
        return JSONResponse({"data": [dict(zip(names, row, strict=True)) for row in cursor]})

    @server.custom_route("/api/delete-database", methods=["DELETE"])
    async def delete(request: Request) -> JSONResponse:
        body = await request.json()
        connection = databases.pop(body.get("database_id") or "", None)
        if connection is None:
            return JSONResponse({"detail": "Database not found"}, 404)
        connection.close()
        return JSONResponse({"success": True})

    app: App = server.streamable_http_app()
    return app if log is None else _logging(app, log)
