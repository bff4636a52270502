"""MCP over Streamable HTTP: the handshake, the session id and JSON-RPC exchanges.

The session is opened lazily by the first request, once, under a lock. A
request carrying a session id that the server no longer knows (404, or an old
server's 400 "No valid session ID") re-initializes once and is sent again:
the server refused it unread, so even ``tools/call`` is safe to re-send. Every
caller sharing the session sees one re-initialization, not one each.

The server's chosen protocol version must be one of
:data:`SUPPORTED_PROTOCOL_VERSIONS`; otherwise the session is ended and
:class:`ProtocolVersionError` raised (the spec says the client should disconnect).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import weakref
from collections.abc import Mapping
from typing import Any

import attrs

from eog_core.errors import (
    GymError,
    GymHTTPError,
    GymProtocolError,
    JsonRpcError,
    ProtocolVersionError,
)
from eog_core.gym._transport import HttpRequest, HttpResponse, Transport

__all__ = ["SUPPORTED_PROTOCOL_VERSIONS", "McpSession"]

log = logging.getLogger("eog_core.gym")

CLIENT_INFO = {"name": "eog-core", "version": "0.1.0"}
_ACCEPT = "application/json, text/event-stream"
_VERSION_HEADER_SINCE = "2025-06-18"
_VERSION = re.compile(r"[0-9A-Za-z._-]{1,32}")
# The spec allows visible ASCII only (0x21-0x7E); it is sent back as a header.
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,1024}")
SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP revisions this client speaks (the EOG containers answer 2024-11-05)."""


@attrs.define(eq=False)
class McpSession:
    """One MCP session with one server endpoint (internal to :class:`GymClient`).

    Shared sessions live in the event loop's connection pool and are ended by
    :meth:`aclose` when it closes; ``tools`` caches the server's tool list.
    """

    transport: Transport
    url: str
    gym: str | None
    protocol_version: str
    connect_timeout: float
    base_headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    close_timeout: float = 30.0
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False, repr=False)
    _lock_loop: weakref.ref[asyncio.AbstractEventLoop] | None = attrs.field(
        default=None, init=False, repr=False)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    session_id: str | None = attrs.field(default=None, init=False)
    negotiated_version: str | None = attrs.field(default=None, init=False)
    server_info: Mapping[str, Any] | None = attrs.field(default=None, init=False, repr=False)
    tools: list[dict[str, Any]] | None = attrs.field(default=None, init=False, repr=False)
    """The last ``tools/list`` answer (all pages); dropped when the session is re-initialized."""
    tools_lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False, repr=False)
    initializations: int = attrs.field(default=0, init=False)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str],
        time_limit: float,
        idempotent: bool,
    ) -> Any:
        """Send one JSON-RPC request; return its ``result`` or raise :class:`JsonRpcError`.

        ``headers`` (database id, context) go on this request only, never on the handshake.
        """
        if self.negotiated_version is None:
            await self._initialize_once(stale_session=None, time_limit=time_limit)
        sent_with = self.session_id
        try:
            return await self._exchange(method, params, headers, time_limit, idempotent)
        except GymHTTPError as exc:
            if sent_with is None or not _session_gone(exc):
                raise
            log.info("gym %s: MCP session expired (HTTP %s), re-initializing", self.gym, exc.status)
        await self._initialize_once(stale_session=sent_with, time_limit=time_limit)
        return await self._exchange(method, params, headers, time_limit, idempotent)

    async def close(self, *, time_limit: float) -> None:
        """End the session on the server (best effort: failures are logged)."""
        session_id, self.session_id = self.session_id, None
        version, self.negotiated_version = self.negotiated_version, None
        self.tools = None
        if session_id is not None:
            await self._end(session_id, version, time_limit)

    async def aclose(self) -> None:
        """End the session (the connection pool calls this when it closes)."""
        await self.close(time_limit=self.close_timeout)

    async def _end(self, session_id: str, version: str | None, time_limit: float) -> None:
        request = HttpRequest(
            method="DELETE",
            url=self.url,
            headers={**self.base_headers, **self._session_headers(session_id, version)},
            timeout=time_limit,
            connect_timeout=self.connect_timeout,
            gym=self.gym,
        )
        try:
            await self.transport.send(request)
        except GymHTTPError as exc:
            if exc.status == 405:  # the spec lets a server refuse client-ended sessions
                log.debug("gym %s: the server does not end MCP sessions on DELETE", self.gym)
            else:
                log.info("gym %s: ending the MCP session failed: %s", self.gym, exc)
        except GymError as exc:
            log.info("gym %s: ending the MCP session failed: %s", self.gym, exc)

    def _handshake_lock(self) -> asyncio.Lock:
        """The handshake lock of the running event loop (a lock is bound to one loop)."""
        loop = asyncio.get_running_loop()
        if self._lock_loop is None or self._lock_loop() is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), weakref.ref(loop)
        return self._lock

    async def _initialize_once(self, *, stale_session: str | None, time_limit: float) -> None:
        async with self._handshake_lock():
            if self.negotiated_version is not None and (
                stale_session is None or self.session_id != stale_session
            ):
                return  # another task already (re-)initialized
            self.session_id = None
            self.negotiated_version = None
            self.tools = None  # a new session may be a new server: list its tools again
            params = {
                "protocolVersion": self.protocol_version,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            }
            request_id = next(self._ids)
            response = await self._post(
                {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params},
                {},
                time_limit=time_limit,
                idempotent=True,
                request_id=request_id,
                session_id=None,
                version=None,
            )
            result = _result_of(_pick(response, request_id, self.gym, self.url), self)
            if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
                raise GymProtocolError(
                    "initialize answered without a protocolVersion", gym=self.gym, url=self.url
                )
            session_id = response.headers.get("mcp-session-id")
            if session_id is not None and not _SESSION_ID.fullmatch(session_id):
                raise GymProtocolError(
                    f"initialize answered an unusable mcp-session-id {session_id[:80]!r} "
                    "(visible ASCII only)", gym=self.gym, url=self.url)
            version = result["protocolVersion"]
            if not _VERSION.fullmatch(version):  # it is sent back as a header on every request
                raise GymProtocolError(
                    f"initialize answered an unusable protocolVersion {version!r}",
                    gym=self.gym, url=self.url)
            if version not in SUPPORTED_PROTOCOL_VERSIONS:
                if session_id is not None:  # disconnect: end what the server opened
                    await self._end(session_id, version, time_limit)
                raise ProtocolVersionError(
                    f"the gym chose MCP protocol version {version!r}; eog_core speaks "
                    f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
                    version=version, supported=SUPPORTED_PROTOCOL_VERSIONS,
                    gym=self.gym, url=self.url)
            self.server_info = result.get("serverInfo")
            await self._post(
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {},
                time_limit=time_limit,
                idempotent=True,
                request_id=None,
                session_id=session_id,
                version=version,
            )
            self.session_id = session_id
            self.negotiated_version = version
            self.initializations += 1

    async def _exchange(
        self,
        method: str,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        time_limit: float,
        idempotent: bool,
    ) -> Any:
        request_id = next(self._ids)
        payload = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self._post(
            payload,
            headers,
            time_limit=time_limit,
            idempotent=idempotent,
            request_id=request_id,
            session_id=self.session_id,
            version=self.negotiated_version,
        )
        return _result_of(_pick(response, request_id, self.gym, self.url), self)

    async def _post(
        self,
        payload: Mapping[str, Any],
        headers: Mapping[str, str],
        *,
        time_limit: float,
        idempotent: bool,
        request_id: int | None,
        session_id: str | None,
        version: str | None,
    ) -> HttpResponse:
        all_headers = {
            **self.base_headers,
            **headers,
            "Accept": _ACCEPT,
            **self._session_headers(session_id, version),
        }
        request = HttpRequest(
            method="POST",
            url=self.url,
            headers=all_headers,
            json=payload,
            timeout=time_limit,
            connect_timeout=self.connect_timeout,
            idempotent=idempotent,
            gym=self.gym,
            sse_until=None if request_id is None else _AnswerTo(request_id),
        )
        return await self.transport.send(request)

    def _session_headers(
        self, session_id: str | None, version: str | None = None
    ) -> dict[str, str]:
        headers: dict[str, str] = {}
        if session_id is not None:
            headers["mcp-session-id"] = session_id
        version = version or self.negotiated_version
        if version is not None and version >= _VERSION_HEADER_SINCE:
            headers["MCP-Protocol-Version"] = version
        return headers


@attrs.frozen
class _AnswerTo:
    """True for the JSON-RPC response (result or error) to request ``request_id``."""

    request_id: int

    def __call__(self, message: Any) -> bool:
        return (
            isinstance(message, dict)
            and message.get("id") == self.request_id
            and ("result" in message or "error" in message)
        )


def _pick(response: HttpResponse, request_id: int, gym: str | None, url: str) -> dict[str, Any]:
    is_answer = _AnswerTo(request_id)
    candidates: tuple[Any, ...]
    if response.is_event_stream:
        candidates = response.messages
    elif isinstance(response.body, list):
        candidates = tuple(response.body)
    else:
        candidates = (response.body,)
    for message in candidates:
        if is_answer(message):
            answer: dict[str, Any] = message
            return answer
    where = "event stream ended" if response.is_event_stream else "answer arrived"
    raise GymProtocolError(
        f"{where} without a JSON-RPC response to request {request_id}", gym=gym, url=url
    )


def _result_of(message: dict[str, Any], session: McpSession) -> Any:
    error = message.get("error")
    if error is None:
        return message.get("result")
    if not isinstance(error, dict):
        raise GymProtocolError(
            f"malformed JSON-RPC error: {error!r}", gym=session.gym, url=session.url
        )
    code = error.get("code")
    raise JsonRpcError(
        str(error.get("message", "")),
        code=code if isinstance(code, int) else -32603,
        data=error.get("data"),
        gym=session.gym,
        url=session.url,
    )


def _session_gone(error: GymHTTPError) -> bool:
    if error.status == 404:
        return True
    return error.status == 400 and "session" in error.detail.lower()
