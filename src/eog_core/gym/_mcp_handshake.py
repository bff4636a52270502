"""MCP's ``initialize`` exchange as data: the request this client sends and what
it accepts in the answer (a usable session id, a protocol version it speaks).

Free of session state, so :class:`eog_core.gym._mcp.McpSession` keeps only the
order of the steps (and ending a session it cannot use).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from eog_core._mcp_protocol import SESSION_HEADER, SUPPORTED_PROTOCOL_VERSIONS
from eog_core._version import __version__
from eog_core.errors import GymProtocolError, ProtocolVersionError
from eog_core.gym._http import HttpResponse
from eog_core.gym._jsonrpc import pick_answer, result_of

__all__ = ["CLIENT_INFO", "INITIALIZED", "Initialized", "initialize_request", "read_initialize"]

CLIENT_INFO = {"name": "eog-core", "version": __version__}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
_VERSION = re.compile(r"[0-9A-Za-z._-]{1,32}")
# The spec allows visible ASCII only (0x21-0x7E); it is sent back as a header.
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,1024}")


def initialize_request(request_id: int, protocol_version: str) -> dict[str, Any]:
    params = {"protocolVersion": protocol_version, "capabilities": {}, "clientInfo": CLIENT_INFO}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


@attrs.frozen(kw_only=True)
class Initialized:
    """What an ``initialize`` answer opened: ``refusal`` is the error to raise after
    ending ``session_id`` (a version this client cannot send back or does not speak)."""

    session_id: str | None
    version: str
    server_info: Mapping[str, Any] | None
    refusal: GymProtocolError | None = None

    @property
    def sendable_version(self) -> str | None:
        """The version if it may go back as a header (to end a refused session)."""
        return self.version if _VERSION.fullmatch(self.version) else None


def read_initialize(
    response: HttpResponse, request_id: int, gym: str | None, url: str
) -> Initialized:
    """The answer to ``initialize``; :class:`GymProtocolError` when it opened nothing usable."""
    result = result_of(pick_answer(response, request_id, gym, url), gym, url)
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise GymProtocolError("initialize answered without a protocolVersion", gym=gym, url=url)
    session_id = response.headers.get(SESSION_HEADER)
    if session_id is not None and not _SESSION_ID.fullmatch(session_id):
        raise GymProtocolError(
            f"initialize answered an unusable mcp-session-id {session_id[:80]!r} "
            "(visible ASCII only)",
            gym=gym,
            url=url,
        )
    version = result["protocolVersion"]
    refusal: GymProtocolError | None = None
    if not _VERSION.fullmatch(version):  # it is sent back as a header on every request
        refusal = GymProtocolError(
            f"initialize answered an unusable protocolVersion {version!r}", gym=gym, url=url
        )
    elif version not in SUPPORTED_PROTOCOL_VERSIONS:  # the spec says: disconnect
        refusal = ProtocolVersionError(
            f"the gym chose MCP protocol version {version!r}; eog_core speaks "
            f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
            version=version,
            supported=SUPPORTED_PROTOCOL_VERSIONS,
            gym=gym,
            url=url,
        )
    return Initialized(
        session_id=session_id,
        version=version,
        server_info=result.get("serverInfo"),
        refusal=refusal,
    )
