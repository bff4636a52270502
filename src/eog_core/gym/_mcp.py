"""MCP over Streamable HTTP: the handshake, the session id and JSON-RPC exchanges.

The session is opened lazily by the first request. The handshake runs as one
task that every waiting caller joins: one handshake, one outcome (a gym that
hangs costs every waiter one timeout, not one each), and a caller cancelled
mid-handshake does not orphan what the server opened. The session id is owned
from the moment the ``initialize`` answer arrives: closing ends it with
``DELETE`` even if ``notifications/initialized`` never completed. A request
carrying a session id that the server no longer knows (404, or an old
server's 400 "No valid session ID") re-initializes once and is sent again:
the server refused it unread, so even ``tools/call`` is safe to re-send. Every
caller sharing the session sees one re-initialization, not one each. Once
closed, a session never re-initializes: every request raises
:class:`ClosedError`.

Requests the server sends on a response stream before its answer (``ping``,
``elicitation/create``, ``sampling/createMessage``, ``roots/list``) are
answered by POST at once: ``ping`` with an empty result, anything else with
JSON-RPC ``-32601`` (this client offers no such capability). Requests sent on
the standalone ``GET`` stream (related to no request of ours) are answered
alike only by a session opened with ``listen``; otherwise that stream is never
opened, and a tool waiting on such a request hangs until its time limit.

The server's chosen protocol version must be one of
:data:`SUPPORTED_PROTOCOL_VERSIONS`; otherwise the session is ended and
:class:`ProtocolVersionError` raised (the spec says the client should disconnect).

This module is the session's state machine; reading JSON-RPC answers and
replying to the server's requests is :mod:`eog_core.gym._jsonrpc`, what
``initialize`` sends and accepts :mod:`eog_core.gym._mcp_handshake`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from eog_core._mcp_protocol import SUPPORTED_PROTOCOL_VERSIONS, VERSION_HEADER_FROM
from eog_core.errors import ClosedError, GymError, GymHTTPError, GymTimeoutError
from eog_core.gym._http import new_request
from eog_core.gym._jsonrpc import AnswerTo, ServerRequests, pick_answer, result_of, session_gone
from eog_core.gym._mcp_handshake import INITIALIZED, initialize_request, read_initialize
from eog_core.gym._mcp_stream import ServerStream
from eog_core.gym._tool_cache import ToolCache
from eog_core.gym._transport import HttpRequest, HttpResponse, Transport

__all__ = ["SUPPORTED_PROTOCOL_VERSIONS", "McpSession"]

log = logging.getLogger("eog_core.gym")

_ACCEPT = "application/json, text/event-stream"
_MERGED_MAX = 1024  # cached header sets per session (a few per task in flight)
_NO_HEADERS: Mapping[str, str] = {}


@attrs.define(eq=False)
class McpSession:
    """One MCP session with one server endpoint (internal to :class:`GymClient`).

    Shared sessions live in the event loop's connection pool and are ended by
    :meth:`aclose` when it closes; ``tool_cache`` holds the server's tool list.
    """

    transport: Transport
    url: str
    gym: str | None
    protocol_version: str
    connect_timeout: float
    base_headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    close_timeout: float = 30.0
    listen: bool = False
    """Open the standalone ``GET`` stream after each handshake and answer the server's
    requests on it (:mod:`eog_core.gym._mcp_stream`)."""
    _handshake: asyncio.Future[None] | None = attrs.field(default=None, init=False, repr=False)
    _unconfirmed: tuple[str, str] | None = attrs.field(default=None, init=False, repr=False)
    """A session the server opened whose ``initialized`` notification has not completed."""
    closed: bool = attrs.field(default=False, init=False)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    session_id: str | None = attrs.field(default=None, init=False)
    negotiated_version: str | None = attrs.field(default=None, init=False)
    server_info: Mapping[str, Any] | None = attrs.field(default=None, init=False, repr=False)
    tool_cache: ToolCache = attrs.field(factory=ToolCache, init=False, repr=False)
    """The server's tool list; cleared when the session is re-initialized."""
    initializations: int = attrs.field(default=0, init=False)
    _fixed: dict[str, str] = attrs.field(factory=dict, init=False, repr=False)
    _merged: dict[int, tuple[Mapping[str, str], CIMultiDictProxy[str]]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    """Per caller's headers object (by identity): the request's whole headers, built once."""
    """``Accept`` and the session's headers, sent on every request in the session."""
    _answerer: ServerRequests | None = attrs.field(default=None, init=False, repr=False)
    _stream: ServerStream | None = attrs.field(default=None, init=False, repr=False)

    def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str],
        time_limit: float,
        idempotent: bool,
    ) -> Coroutine[Any, Any, Any]:
        """Send one JSON-RPC request; return its ``result`` or raise :class:`JsonRpcError`.

        ``headers`` (database id, context) go on this request only, never on the
        handshake; never mutate them after passing them (the merged headers are
        cached per headers object). The whole call (joining or running the handshake, the exchange,
        a re-initialization and the second exchange) is bounded by ``time_limit``;
        an open session's exchange is one request bounded by the transport.
        """
        if self.negotiated_version is None or self.closed:
            return self._bounded(
                method,
                time_limit,
                self._request(method, params, headers, time_limit, idempotent, stale=None),
            )
        # An open session: one exchange, re-initialized only when the server says
        # the session is gone.
        return self._exchange(method, params, headers, time_limit, idempotent, renew=True)

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        time_limit: float,
        idempotent: bool,
        *,
        stale: int | None,
    ) -> Any:
        """The slow path: initialize (``stale``: re-initialize a session the server
        said was gone) and exchange; a first session found gone is re-initialized once."""
        await self._initialize_once(stale=stale, time_limit=time_limit)
        self._check_open()
        if stale is not None:
            return await self._exchange(method, params, headers, time_limit, idempotent)
        sent_with, generation = self.session_id, self.initializations
        try:
            return await self._exchange(method, params, headers, time_limit, idempotent)
        except GymHTTPError as exc:
            self._raise_unless_gone(exc, sent_with)
        await self._initialize_once(stale=generation, time_limit=time_limit)
        self._check_open()
        return await self._exchange(method, params, headers, time_limit, idempotent)

    def _raise_unless_gone(self, error: GymHTTPError, sent_with: str | None) -> None:
        """Re-raise ``error`` unless it says the session it was sent in is gone (then
        the caller re-initializes, which a closed session never does)."""
        if sent_with is None or not session_gone(error):
            raise error
        self._check_open()
        log.info("gym %s: MCP session expired (HTTP %s), re-initializing", self.gym, error.status)

    async def _bounded(self, method: str, time_limit: float, call: Coroutine[Any, Any, Any]) -> Any:
        try:
            async with asyncio.timeout(time_limit):
                return await call
        except TimeoutError as exc:
            raise GymTimeoutError(
                f"{method} did not complete within {time_limit}s", gym=self.gym, url=self.url
            ) from exc

    async def close(self, *, time_limit: float) -> None:
        """End the session on the server, for good (best effort: failures are logged).

        A handshake in flight is given ``time_limit`` to finish, so that the
        session it opens is known and ended. Closing runs as its own task: a
        cancelled close still ends the session.
        """
        self.closed = True
        closing = asyncio.ensure_future(self._close(time_limit))
        _ENDING.add(closing)
        closing.add_done_callback(_ENDING.discard)
        closing.add_done_callback(_retrieve)  # its closer may have been cancelled
        await asyncio.shield(closing)

    async def _close(self, time_limit: float) -> None:
        handshake = self._handshake
        if handshake is not None and not handshake.done():
            await asyncio.wait([handshake], timeout=time_limit)
            if not handshake.done():
                handshake.cancel()
                await asyncio.wait([handshake])
        ends = []
        if self.session_id is not None:
            ends.append((self.session_id, self.negotiated_version))
        if self._unconfirmed is not None:
            ends.append(self._unconfirmed)
        self._set_session(None, None)
        self._unconfirmed = None
        self.tool_cache.clear()
        await asyncio.gather(
            *(self._end(session_id, version, time_limit) for session_id, version in ends)
        )

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError(f"the MCP session with gym {self.gym or self.url} was closed")

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
        except (GymError, ClosedError) as exc:  # ClosedError: the pool closed under it
            log.info("gym %s: ending the MCP session failed: %s", self.gym, exc)

    async def _initialize_once(self, *, stale: int | None, time_limit: float) -> None:
        """Join the handshake in flight, or start one; every joiner gets its outcome.

        ``stale`` is the handshake count a request was sent under when the server
        said its session was gone (a server may hand out the same id again).
        """
        while True:
            self._check_open()
            if self.negotiated_version is not None and (
                stale is None or self.initializations != stale
            ):
                return  # initialized (or already re-initialized by another caller)
            handshake = self._handshake
            if handshake is None or handshake.done():
                handshake = self._handshake = asyncio.ensure_future(self._shake_hands(time_limit))
                handshake.add_done_callback(_retrieve)
            try:
                await asyncio.shield(handshake)  # its failure is every waiter's failure
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not handshake.cancelled() or (current is not None and current.cancelling()):
                    raise  # this caller was cancelled
                # The handshake itself was cancelled (by close): look again.

    async def _shake_hands(self, time_limit: float) -> None:
        self._set_session(None, None)
        self.tool_cache.clear()  # a new session may be a new server: list its tools again
        request_id = next(self._ids)
        response = await self._post(
            initialize_request(request_id, self.protocol_version),
            {},
            time_limit=time_limit,
            idempotent=True,
            request_id=request_id,
            session_id=None,
            version=None,
        )
        opened = read_initialize(response, request_id, self.gym, self.url)
        session_id, version = opened.session_id, opened.version
        if opened.refusal is not None:
            if session_id is not None:  # end what the server opened, then refuse it
                await self._end(session_id, opened.sendable_version, time_limit)
            raise opened.refusal
        self.server_info = opened.server_info
        if session_id is not None:
            self._unconfirmed = (session_id, version)  # ours from now on: close ends it
        try:
            await self._post(
                INITIALIZED,
                {},
                time_limit=time_limit,
                idempotent=True,
                request_id=None,
                session_id=session_id,
                version=version,
            )
        except GymError:
            self._unconfirmed = None
            if session_id is not None:
                await self._end(session_id, version, time_limit)
            raise
        self._unconfirmed = None
        self._set_session(session_id, version)
        self.initializations += 1
        if self.listen:
            await self._listen(session_id, version, time_limit)

    def _headers(self, headers: Mapping[str, str]) -> CIMultiDictProxy[str]:
        """``headers`` with the credentials and the session's headers, as aiohttp sends
        them. A caller sending the same headers object again (a task's calls) gets the
        same read-only result: building it is a good part of a request's client CPU."""
        if not headers:
            headers = _NO_HEADERS  # one entry for every caller without headers
        merged = self._merged.get(id(headers))
        if merged is not None and merged[0] is headers:  # the entry keeps its key alive
            return merged[1]
        whole = CIMultiDictProxy(CIMultiDict({**self.base_headers, **headers, **self._fixed}))
        if len(self._merged) >= _MERGED_MAX:
            self._merged.clear()
        self._merged[id(headers)] = (headers, whole)
        return whole

    def _set_session(self, session_id: str | None, version: str | None) -> None:
        """The session requests are sent in, with the headers and answerer that go with it."""
        if self._stream is not None:  # it listened in the session now left
            self._stream.close()
            self._stream = None
        self.session_id, self.negotiated_version = session_id, version
        self._fixed = {"Accept": _ACCEPT, **self._session_headers(session_id, version)}
        self._merged.clear()
        self._answerer = self._server_requests(session_id, version)

    async def _exchange(
        self,
        method: str,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        time_limit: float,
        idempotent: bool,
        *,
        renew: bool = False,
    ) -> Any:
        """One request in the current session; with ``renew``, a session the server
        says is gone is re-initialized and the request sent again (within ``time_limit``)."""
        request_id = next(self._ids)
        started = asyncio.get_running_loop().time() if renew else 0.0
        request = new_request(
            "POST",
            self.url,
            self._headers(headers),
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
            time_limit,
            self.connect_timeout,
            idempotent,
            self.gym,
            AnswerTo(request_id),
            self._answerer,
            False,
            started + time_limit if renew else None,
        )  # retries within the call's bound
        if renew:
            sent_with, generation = self.session_id, self.initializations
            try:
                response = await self.transport.send(request)
            except GymHTTPError as exc:
                self._raise_unless_gone(exc, sent_with)
                gone = True
            else:
                gone = False
            if gone:
                left = max(0.0, started + time_limit - asyncio.get_running_loop().time())
                return await self._bounded(
                    method,
                    left,
                    self._request(method, params, headers, left, idempotent, stale=generation),
                )
        else:
            response = await self.transport.send(request)
        body = response.body
        if (
            not response.is_event_stream
            and type(body) is dict
            and body.get("id") == request_id
            and ("result" in body or "error" in body)
        ):
            return result_of(body, self.gym, self.url)  # the usual answer: one JSON object
        return result_of(pick_answer(response, request_id, self.gym, self.url), self.gym, self.url)

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
        """One POST outside the open session's fast path (the handshake, replies)."""
        all_headers = {
            **self.base_headers,
            **headers,
            "Accept": _ACCEPT,
            **self._session_headers(session_id, version),
        }
        return await self.transport.send(
            HttpRequest(
                method="POST",
                url=self.url,
                headers=all_headers,
                json=payload,
                timeout=time_limit,
                connect_timeout=self.connect_timeout,
                idempotent=idempotent,
                gym=self.gym,
                sse_until=None if request_id is None else AnswerTo(request_id),
                on_message=None
                if request_id is None
                else self._server_requests(session_id, version),
            )
        )

    def _session_headers(
        self, session_id: str | None, version: str | None = None
    ) -> dict[str, str]:
        headers: dict[str, str] = {}
        if session_id is not None:
            headers["mcp-session-id"] = session_id
        version = version or self.negotiated_version
        if version is not None and version >= VERSION_HEADER_FROM:
            headers["MCP-Protocol-Version"] = version
        return headers

    async def _listen(self, session_id: str | None, version: str | None, time_limit: float) -> None:
        """Open the standalone stream of the session just initialized (within ``time_limit``)."""
        stream = self._stream = ServerStream(
            transport=self.transport,
            url=self.url,
            gym=self.gym,
            headers={
                **self.base_headers,
                "Accept": "text/event-stream",
                **self._session_headers(session_id, version),
            },
            connect_timeout=self.connect_timeout,
            answer=self._server_requests(session_id, version),
        )
        await stream.open(time_limit)

    def _server_requests(self, session_id: str | None, version: str | None) -> ServerRequests:
        """What answers the server's requests in session ``session_id`` (by POST, in it)."""

        async def post(reply: dict[str, Any]) -> HttpResponse:
            return await self._post(
                reply,
                {},
                time_limit=self.close_timeout,
                idempotent=True,
                request_id=None,
                session_id=session_id,
                version=version,
            )

        return ServerRequests(post=post, gym=self.gym)


_ENDING: set[asyncio.Future[Any]] = set()  # closes kept alive past a cancelled caller


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a handshake's failure as seen: its waiters may all have gone."""
    if not future.cancelled():
        future.exception()
