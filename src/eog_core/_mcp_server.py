"""The server side of MCP over Streamable HTTP, shared by the local gym and the gateway.

Error codes, protocol-version negotiation and the JSON and SSE framing of
JSON-RPC answers: what every MCP endpoint we serve answers alike. The revisions
and header names, shared with the client, live in :mod:`eog_core._mcp_protocol`
(re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from eog_core._json import JsonInputError, dumps_line, loads_untrusted
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
    "dumps",
    "error_response",
    "negotiate_version",
    "read_message",
    "rpc_error",
    "sse_event",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BAD_SESSION = -32000
SESSION_NOT_FOUND = -32001


def negotiate_version(requested: object) -> str:
    """The client's protocol version if we support it, else our latest."""
    if isinstance(requested, str) and requested in SUPPORTED_PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION


def dumps(value: Any) -> str:
    """``value`` as JSON text (``ensure_ascii=False``, ``default=str``) that always encodes to
    UTF-8: a lone surrogate (in a JSON-RPC id, a ``clientInfo``, a gym's text) is written as
    its ``\\ud800`` escape, so an answer can never fail to encode after its call ran."""
    return dumps_line(value)


def read_message(body: bytes) -> Any:
    """A request body as JSON, read as hostile input (:func:`eog_core._json.loads_untrusted`:
    UTF-8 only, nesting bounded, no lone surrogate escape, no 4,300-digit integer); raises
    :class:`JsonInputError`, answered as a JSON-RPC parse error."""
    return loads_untrusted(body)


def sse_event(payload: Mapping[str, Any] | str) -> bytes:
    """One JSON-RPC message (a mapping, or its JSON text) as an SSE ``message`` event."""
    text = payload if isinstance(payload, str) else dumps(payload)
    return f"event: message\ndata: {text}\n\n".encode()


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def error_response(request_id: Any, code: int, message: str, *, status: int) -> web.Response:
    """A JSON-RPC error answer with an HTTP status (400 bad request, 404 no such session...)."""
    return web.json_response(rpc_error(request_id, code, message), status=status, dumps=dumps)
