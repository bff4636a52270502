"""MCP over Streamable HTTP: the handshake, the session id and JSON-RPC exchanges.

The session is opened lazily by the first request. The handshake runs as one
task that every waiting caller joins: one handshake, one outcome (a gym that
hangs costs every waiter one timeout, not one each), and a caller cancelled
mid-handshake does not orphan what the server opened. The session id is owned
from the moment the ``initialize`` answer arrives: closing ends it with
``DELETE`` even if ``notifications/initialized`` never completed. A request
carrying a session id that the server no longer knows (404, or an old
server's 400 "No valid session ID") re-initializes once. It is sent again only
when it cannot have run: a 404 (the spec's answer in a session the server
ended: refused unread), or a request that is safe to repeat. A ``tools/call``
answered 400 naming a session is never re-sent (a 400 may come after the tool
ran): the error is raised and the next request opens a new session. Every
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
``initialize`` sends and accepts :mod:`eog_core.gym._mcp_handshake`, the
headers of the session's requests :mod:`eog_core.gym._mcp_headers`, the
``DELETE`` that ends it :mod:`eog_core.gym._mcp_ending`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

import attrs

from eog_core._mcp_protocol import SUPPORTED_PROTOCOL_VERSIONS
from eog_core.errors import ClosedError, GymError, GymHTTPError, GymTimeoutError
from eog_core.gym._http import new_request
from eog_core.gym._jsonrpc import (
    AnswerTo,
    ServerRequests,
    pick_answer,
    refused_unread,
    result_of,
    session_gone,
)
from eog_core.gym._mcp_ending import end_session, keep_until_done, retrieve
from eog_core.gym._mcp_handshake import INITIALIZED, initialize_request, read_initialize
from eog_core.gym._mcp_headers import ACCEPT, MergedHeaders, session_headers
from eog_core.gym._mcp_stream import ServerStream
from eog_core.gym._tool_cache import ToolCache
from eog_core.gym._transport import HttpRequest, HttpResponse, Transport

__all__ = ["SUPPORTED_PROTOCOL_VERSIONS", "McpSession"]

log = logging.getLogger("eog_core.gym")


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
    _headers: MergedHeaders = attrs.field(factory=MergedHeaders, init=False, repr=False)
    """``Accept`` and the session's headers, merged with each caller's headers once."""
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
            self._raise_unless_resendable(exc, sent_with, idempotent)
        await self._initialize_once(stale=generation, time_limit=time_limit)
        self._check_open()
        return await self._exchange(method, params, headers, time_limit, idempotent)

    def _raise_unless_resendable(
        self, error: GymHTTPError, sent_with: str | None, idempotent: bool
    ) -> None:
        """Re-raise ``error`` unless it says the session it was sent in is gone and the
        request may be sent again (then the caller re-initializes, which a closed
        session never does). A request that may have run is never sent again: its
        session is dropped, so that the next request opens a new one."""
        if sent_with is None or not session_gone(error):
            raise error
        self._check_open()
        if not (idempotent or refused_unread(error)):
            log.warning("gym %s: HTTP 400 naming the MCP session; not re-sent", self.gym)
            idle = self._handshake is None or self._handshake.done()
            if self.session_id == sent_with and idle:
                self._set_session(None, None)  # the next request opens a new session
            raise error
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
        keep_until_done(closing)
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
        await end_session(self.transport, request)

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
                handshake.add_done_callback(retrieve)
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

    def _set_session(self, session_id: str | None, version: str | None) -> None:
        """The session requests are sent in, with the headers and answerer that go with it."""
        if self._stream is not None:  # it listened in the session now left
            self._stream.close()
            self._stream = None
        self.session_id, self.negotiated_version = session_id, version
        self._headers.reset(session_id, version or self.negotiated_version)
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
            self._headers.merge(self.base_headers, headers),
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
                self._raise_unless_resendable(exc, sent_with, idempotent)
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
            "Accept": ACCEPT,
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
        return session_headers(session_id, version or self.negotiated_version)

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
