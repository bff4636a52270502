"""The local gym's MCP endpoint: JSON-RPC 2.0 over Streamable HTTP.

Speaks what the EOG containers and the official SDK speak: ``initialize`` hands
out an ``mcp-session-id``; later requests must carry it (400 when missing, 404
when unknown or expired); from protocol 2025-06-18 on, a wrong
``MCP-Protocol-Version`` header is refused with 400. Answers are plain JSON or
one SSE stream per request, chosen per server. Reading and checking a message, the
session check and the answers' text are the core shared with the gateway
(:mod:`eog_core._mcp_server`); the tools, databases and fault knobs are the gym's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

import attrs
from aiohttp import web

from eog_core._mcp_server import (
    INVALID_PARAMS,
    LATEST_PROTOCOL_VERSION,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    SUPPORTED_PROTOCOL_VERSIONS,
    RpcFailure,
    RpcRefusal,
    check_session,
    dumps,
    initialize_result,
    method_not_found,
    negotiate_version,
    parse_message,
    result_text,
    sse_event,
    tool_name,
)
from eog_core.errors import ToolError

from ._databases import DatabaseStore
from ._faults import Counters, FaultPlan, drop_connection
from ._ledger import Ledger
from ._tools import ToolContext, ToolRegistry, tool_result, validate_arguments

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "MISSING_DATABASE_ID_TEXT",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "McpEndpoint",
    "ResponseMode",
    "negotiate_version",
]

MISSING_DATABASE_ID_TEXT = "Error: x-database-id header is required for database isolation"

ResponseMode = Literal["json", "sse"]


@attrs.define
class _Session:
    session_id: str
    protocol_version: str
    initialized: bool = False


@attrs.define
class McpEndpoint:
    """Handles POST and DELETE on the MCP path of one gym."""

    server_name: str
    server_version: str
    tools: ToolRegistry
    databases: DatabaseStore
    faults: FaultPlan
    counters: Counters
    ledger: Ledger = attrs.field(factory=Ledger)
    response_mode: ResponseMode = "json"
    sse_noise: bool = True
    _sessions: dict[str, _Session] = attrs.field(factory=dict, init=False)

    def session_ids(self) -> list[str]:
        return list(self._sessions)

    def expire_sessions(self) -> int:
        """Forget every session; later requests with those ids get 404. Returns how many."""
        count = len(self._sessions)
        self._sessions.clear()
        return count

    async def handle_post(self, request: web.Request) -> web.StreamResponse:
        message = parse_message(await request.read())
        if isinstance(message, RpcRefusal):
            return _refused(message)
        if message is None:
            return web.Response(status=202)  # a client's answer to a server request: ignored
        self.counters.methods[message.method] += 1
        if message.method == "initialize":
            return await self._initialize(request, message.request_id, message.params)
        session = self._check_session(request, message.request_id)
        if isinstance(session, web.Response):
            return session
        if not message.is_request:
            if message.method == "notifications/initialized":
                session.initialized = True
            return web.Response(status=202, headers={SESSION_HEADER: session.session_id})
        try:
            result = await self._dispatch(request, message.method, message.params)
        except RpcFailure as failure:
            result = failure
        if result is _DROPPED:
            return drop_connection(request)
        return await self._answer(
            request, result_text(message.request_id, result), session.session_id
        )

    async def handle_delete(self, request: web.Request) -> web.StreamResponse:
        session = self._check_session(request, None)
        if isinstance(session, web.Response):
            return session
        self._sessions.pop(session.session_id, None)
        return web.Response(status=200)

    async def _initialize(
        self, request: web.Request, request_id: Any, params: Mapping[str, Any]
    ) -> web.StreamResponse:
        session = _Session(
            session_id=uuid.uuid4().hex,
            protocol_version=negotiate_version(params.get("protocolVersion")),
        )
        self._sessions[session.session_id] = session
        server_info = {"name": self.server_name, "version": self.server_version}
        result = initialize_result(session.protocol_version, server_info)
        return await self._answer(request, result_text(request_id, result), session.session_id)

    def _check_session(self, request: web.Request, request_id: Any) -> _Session | web.Response:
        found = check_session(
            self._sessions,
            request.headers.get(SESSION_HEADER),
            request.headers.get(PROTOCOL_HEADER),
            request_id,
        )
        return _refused(found) if isinstance(found, RpcRefusal) else found

    async def _dispatch(self, request: web.Request, method: str, params: dict[str, Any]) -> Any:
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools.describe()}
        if method == "tools/call":
            return await self._call_tool(request, params)
        raise method_not_found(method)

    async def _call_tool(self, request: web.Request, params: dict[str, Any]) -> Any:
        name = tool_name(params)
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcFailure(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        database_id = request.headers.get("x-database-id", "").strip()
        if not database_id:
            return tool_result(MISSING_DATABASE_ID_TEXT, is_error=True)
        spec = self.tools.get(name)
        if spec is None:
            return tool_result(f"Error: Unknown tool: {name}", is_error=True)
        connection = self.databases.get(database_id)
        if connection is None:
            return tool_result(f"Error: Database not found: {database_id}", is_error=True)
        problems = validate_arguments(spec.input_schema, arguments)
        if problems:
            text = f"Error: Invalid arguments for tool {name}: {'; '.join(problems)}"
            return tool_result(text, is_error=True)
        context = ToolContext(
            connection=connection,
            database_id=database_id,
            headers={key.lower(): value for key, value in request.headers.items()},
            tool_name=name,
        )
        async with self.databases.lock(database_id):  # SQL-runner queries run in a thread
            if self.databases.get(database_id) is not connection:
                return tool_result(f"Error: Database not found: {database_id}", is_error=True)
            self.counters.tool_executions[name] += 1
            self.ledger.executed(database_id, name, arguments)
            try:
                value = await spec.invoke(context, arguments)
                connection.commit()
            except ToolError as exc:
                connection.rollback()
                result = tool_result(f"Error: {exc}", is_error=True)
            except Exception as exc:
                connection.rollback()
                result = tool_result(
                    f"Error executing tool {name}: {type(exc).__name__}: {exc}", is_error=True
                )
            else:
                result = tool_result(value)
        if self.faults.drop_after_tool_call(request.path):
            return _DROPPED
        return result

    async def _answer(
        self, request: web.Request, payload: str, session_id: str
    ) -> web.StreamResponse:
        """One JSON-RPC answer (``payload``, JSON text), as plain JSON or one SSE stream."""
        headers = {SESSION_HEADER: session_id}
        if self.response_mode == "json":
            return web.Response(text=payload, content_type="application/json", headers=headers)
        response = web.StreamResponse(
            status=200,
            headers={**headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
        await response.prepare(request)
        if self.sse_noise:
            # A comment and a notification before the answer: clients must pick by id.
            await response.write(b": warming up\n\n")
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "logger": self.server_name, "data": "handling"},
            }
            await response.write(sse_event(log))
        await response.write(sse_event(payload))
        await response.write_eof()
        return response


def _refused(refusal: RpcRefusal) -> web.Response:
    """A request refused before dispatch: its JSON-RPC error with its HTTP status."""
    return web.json_response(refusal.payload(), status=refusal.status, dumps=dumps)


_DROPPED = object()
