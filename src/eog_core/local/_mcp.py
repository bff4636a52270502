"""The local gym's MCP endpoint: JSON-RPC 2.0 over Streamable HTTP.

Speaks what the EOG containers and the official SDK speak: ``initialize`` hands
out an ``mcp-session-id``; later requests must carry it (400 when missing, 404
when unknown or expired); from protocol 2025-06-18 on, a wrong
``MCP-Protocol-Version`` header is refused with 400. Answers are plain JSON or
one SSE stream per request, chosen per server.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

import attrs
from aiohttp import web

from eog_core._mcp_server import (
    BAD_SESSION,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    SESSION_NOT_FOUND,
    SUPPORTED_PROTOCOL_VERSIONS,
    VERSION_HEADER_FROM,
    JsonInputError,
    negotiate_version,
    read_message,
    rpc_error,
)
from eog_core._mcp_server import dumps as _dumps
from eog_core._mcp_server import error_response as _error_response
from eog_core._mcp_server import sse_event as _sse_event
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


class _RpcFailure(Exception):
    """A JSON-RPC error to answer instead of a result."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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
        try:
            message = read_message(await request.read())
        except JsonInputError as exc:  # not UTF-8, too deep, a lone surrogate escape...
            return _error_response(None, PARSE_ERROR, f"Parse error: {exc.reason}", status=400)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error_response(None, INVALID_REQUEST, "Invalid Request", status=400)
        request_id = message.get("id")
        method = message.get("method")
        if method is None and "id" in message and ("result" in message or "error" in message):
            return web.Response(status=202)  # a client's answer to a server request: ignored
        if not isinstance(method, str):
            return _error_response(request_id, INVALID_REQUEST, "Invalid Request", status=400)
        self.counters.methods[method] += 1
        if method == "initialize":
            if "id" not in message:
                return _error_response(
                    None, INVALID_REQUEST, "initialize must be a request", status=400
                )
            return await self._initialize(request, message)
        session_or_failure = self._check_session(request, request_id)
        if isinstance(session_or_failure, web.Response):
            return session_or_failure
        session = session_or_failure
        if "id" not in message:
            if method == "notifications/initialized":
                session.initialized = True
            return web.Response(status=202, headers={SESSION_HEADER: session.session_id})
        params = message.get("params")
        try:
            if params is not None and not isinstance(params, dict):
                raise _RpcFailure(INVALID_PARAMS, "Invalid params: params must be an object")
            result = await self._dispatch(request, method, params or {})
        except _RpcFailure as failure:
            payload = rpc_error(request_id, failure.code, failure.message)
        else:
            if result is _DROPPED:
                return drop_connection(request)
            payload = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return await self._answer(request, payload, session.session_id)

    async def handle_delete(self, request: web.Request) -> web.StreamResponse:
        session_or_failure = self._check_session(request, None)
        if isinstance(session_or_failure, web.Response):
            return session_or_failure
        self._sessions.pop(session_or_failure.session_id, None)
        return web.Response(status=200)

    async def _initialize(
        self, request: web.Request, message: Mapping[str, Any]
    ) -> web.StreamResponse:
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        session = _Session(
            session_id=uuid.uuid4().hex,
            protocol_version=negotiate_version(params.get("protocolVersion")),
        )
        self._sessions[session.session_id] = session
        result = {
            "protocolVersion": session.protocol_version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": self.server_name, "version": self.server_version},
        }
        payload = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
        return await self._answer(request, payload, session.session_id)

    def _check_session(self, request: web.Request, request_id: Any) -> _Session | web.Response:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            return _error_response(
                request_id, BAD_SESSION, "Bad Request: Missing session ID", status=400
            )
        session = self._sessions.get(session_id)
        if session is None:
            return _error_response(request_id, SESSION_NOT_FOUND, "Session not found", status=404)
        header_version = request.headers.get(PROTOCOL_HEADER)
        if (
            session.protocol_version >= VERSION_HEADER_FROM
            and header_version is not None
            and header_version != session.protocol_version
        ):
            return _error_response(
                request_id,
                BAD_SESSION,
                f"Bad Request: Unsupported protocol version: {header_version}",
                status=400,
            )
        return session

    async def _dispatch(self, request: web.Request, method: str, params: dict[str, Any]) -> Any:
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools.describe()}
        if method == "tools/call":
            return await self._call_tool(request, params)
        raise _RpcFailure(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _call_tool(self, request: web.Request, params: dict[str, Any]) -> Any:
        name = params.get("name")
        if not isinstance(name, str):
            raise _RpcFailure(INVALID_PARAMS, "Invalid params: 'name' must be a string")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _RpcFailure(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
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
        self, request: web.Request, payload: dict[str, Any], session_id: str
    ) -> web.StreamResponse:
        headers = {SESSION_HEADER: session_id}
        if self.response_mode == "json":
            return web.json_response(payload, headers=headers, dumps=_dumps)
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
            await response.write(_sse_event(log))
        await response.write(_sse_event(payload))
        await response.write_eof()
        return response


_DROPPED = object()
