"""The server side of MCP over Streamable HTTP, shared by the local gym and the gateway.

One reading of a JSON-RPC request body (:func:`parse_message`: hostile input,
read through :func:`eog_core._json.loads_untrusted`), one check of a request's
session headers (:func:`check_session`), the error codes, protocol-version
negotiation, and answers built so they cannot fail to encode (:func:`dumps`
escapes a lone surrogate in a gym's text). Each server renders a
:class:`RpcRefusal` as its own HTTP answer (aiohttp's for LocalGym, the
gateway's own). The revisions and header names, shared with the client, live in
:mod:`eog_core._mcp_protocol` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import attrs

from eog_core._json import MAX_DEPTH, JsonInputError, dumps_line, loads_untrusted
from eog_core._mcp_protocol import (
    LATEST_PROTOCOL_VERSION,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    SUPPORTED_PROTOCOL_VERSIONS,
    VERSION_HEADER_FROM,
)

__all__ = [
    "BAD_SESSION",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_HEADER",
    "SESSION_HEADER",
    "SESSION_NOT_FOUND",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "VERSION_HEADER_FROM",
    "JsonInputError",
    "RpcFailure",
    "RpcMessage",
    "RpcRefusal",
    "check_session",
    "dumps",
    "initialize_result",
    "method_not_found",
    "negotiate_version",
    "parse_message",
    "result_text",
    "rpc_error",
    "sse_event",
    "tool_name",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BAD_SESSION = -32000
SESSION_NOT_FOUND = -32001
_SHOWN = 80  # characters of a client's method name or header quoted back in a message
_ENVELOPE = 3
"""Levels around a tool's arguments (message, ``params``, ``arguments``): arguments that nest
:data:`~eog_core._json.MAX_DEPTH` deep, which the client sends, are read."""


class RpcFailure(Exception):
    """A JSON-RPC error to answer instead of a result (HTTP 200: the request was well formed)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@attrs.frozen
class RpcRefusal:
    """A request refused before dispatch: a JSON-RPC error with an HTTP status."""

    request_id: Any
    code: int
    message: str
    status: int = 400

    def payload(self) -> dict[str, Any]:
        return rpc_error(self.request_id, self.code, self.message)


@attrs.frozen
class RpcMessage:
    """One checked JSON-RPC request or notification from a client."""

    method: str
    params: dict[str, Any]
    request_id: Any
    is_request: bool
    """It has an ``id`` (a notification has none and gets 202, no answer)."""


def parse_message(body: bytes) -> RpcMessage | RpcRefusal | None:
    """A POSTed body read as hostile input and checked as one JSON-RPC 2.0 message:
    an :class:`RpcMessage`, an :class:`RpcRefusal` (400: parse error, a batch, no
    ``jsonrpc``, an id neither string nor integer, no string ``method``, ``params`` not
    an object, a notification ``initialize``), or None for a client's answer to a server
    request (202: we send none, so it is ignored)."""
    try:
        message = loads_untrusted(body, max_depth=MAX_DEPTH + _ENVELOPE)
    except JsonInputError as exc:  # not UTF-8, too deep, a lone surrogate escape...
        return RpcRefusal(None, PARSE_ERROR, f"Parse error: {exc.reason}")
    if isinstance(message, list):
        return RpcRefusal(
            None, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not accepted"
        )
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return RpcRefusal(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
    is_request = "id" in message
    request_id = message.get("id")
    if is_request and type(request_id) not in (str, int):
        return RpcRefusal(
            None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer"
        )
    method = message.get("method")
    if method is None and is_request and ("result" in message or "error" in message):
        return None
    if not isinstance(method, str):
        return RpcRefusal(request_id, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return RpcRefusal(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
    if method == "initialize" and not is_request:
        return RpcRefusal(None, INVALID_REQUEST, "initialize must be a request")
    # RpcMessage(method, params or {}, request_id, is_request), without the frozen class's
    # __init__ (a message per request; tests/test_mcp_server_message.py pins the fields)
    checked = _new(RpcMessage)
    _set(checked, "method", method)
    _set(checked, "params", params or {})
    _set(checked, "request_id", request_id)
    _set(checked, "is_request", is_request)
    return checked


_new = object.__new__
_set = object.__setattr__


class _Session(Protocol):
    @property
    def protocol_version(self) -> str: ...


_S = TypeVar("_S", bound=_Session)


def check_session(
    sessions: Mapping[str, _S],
    session_id: str | None,
    version: str | None,
    request_id: Any,
    *,
    not_found: str = "Session not found",
) -> _S | RpcRefusal:
    """The session a request names in its ``mcp-session-id`` header (400 when missing, 404
    when unknown); from protocol 2025-06-18 on, a different ``MCP-Protocol-Version``
    header is refused with 400."""
    if not session_id:
        return RpcRefusal(request_id, BAD_SESSION, "Bad Request: Missing session ID")
    session = sessions.get(session_id)
    if session is None:
        return RpcRefusal(request_id, SESSION_NOT_FOUND, not_found, status=404)
    if (
        session.protocol_version >= VERSION_HEADER_FROM
        and version is not None
        and version != session.protocol_version
    ):
        return RpcRefusal(
            request_id,
            BAD_SESSION,
            f"Bad Request: Unsupported protocol version: {version[:_SHOWN]}",
        )
    return session


def tool_name(params: Mapping[str, Any]) -> str:
    """``tools/call``'s tool name; :class:`RpcFailure` when it is not a string."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcFailure(INVALID_PARAMS, "Invalid params: 'name' must be a string")
    return name


def method_not_found(method: str) -> RpcFailure:
    return RpcFailure(METHOD_NOT_FOUND, f"Method not found: {method[:_SHOWN]}")


def negotiate_version(requested: object) -> str:
    """The client's protocol version if we support it, else our latest."""
    if isinstance(requested, str) and requested in SUPPORTED_PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION


def initialize_result(
    protocol_version: str, server_info: Mapping[str, str], instructions: str | None = None
) -> dict[str, Any]:
    """``initialize``'s result: the negotiated version, tools only, who we are."""
    result: dict[str, Any] = {
        "protocolVersion": protocol_version,
        "capabilities": {"tools": {}},
        "serverInfo": dict(server_info),
    }
    if instructions:
        result["instructions"] = instructions
    return result


def dumps(value: Any) -> str:
    """``value`` as JSON text (``ensure_ascii=False``, ``default=str``) that always encodes to
    UTF-8: a lone surrogate (in a gym's text, say) is written as its ``\\ud800`` escape, so
    an answer can never fail to encode after its call ran."""
    return dumps_line(value)


def result_text(request_id: Any, result: Any) -> str:
    """A JSON-RPC answer carrying ``result`` (a value, or :class:`RpcFailure`'s error)."""
    if isinstance(result, RpcFailure):
        return dumps(rpc_error(request_id, result.code, result.message))
    return dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def sse_event(payload: Mapping[str, Any] | str) -> bytes:
    """One JSON-RPC message (a mapping, or its JSON text) as an SSE ``message`` event."""
    text = payload if isinstance(payload, str) else dumps(payload)
    return f"event: message\ndata: {text}\n\n".encode()


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
