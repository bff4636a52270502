"""The gateway's HTTP/1.1 server: an asyncio protocol with one handler, nothing else.

Every tool call of every agent crosses this server, so it does only what the gateway's
routes need, over the one wire layer (:mod:`eog_core._http1`, llhttp): keep-alive,
pipelining, ``Content-Length`` and chunked bodies read whole (bounded), ``Expect:
100-continue``, HEAD, and one answer written with a single ``transport.write``.

Every limit comes from one :class:`~eog_core._http1.Limits`: a request the wire layer
refuses (malformed, a head or body too large) is answered with its status and one line,
and the connection closed. A request refused by ``admit`` (a wrong token, a foreign
``Host`` or ``Origin``) or with a ``Content-Length`` over the body limit is answered as
soon as its head is read; its body is then read and dropped so the connection stays
usable (closed instead for a chunked body or a client waiting for ``100 Continue``).

A hostile or careless peer cannot make the server hold much: requests read ahead of the
one being answered are bounded (``max_buffered``), and reading stops while the peer does
not read its answers; at ``max_connections`` the connection idle longest is closed to make
room, or, none being idle, the newcomer is answered 503 and closed; a head must arrive
whole within ``head_deadline`` seconds of its first byte, a body must not stall longer, and
an idle keep-alive connection is closed after ``idle_timeout``. A client that closes its
side (``nc -N``) still gets the answers to every whole request it sent. A client that goes
away does not cancel its request's handler (a finish that is verifying completes and is
recorded); its answer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import cast

from eog_core._http1 import FramingError, Limits, Message, RequestReader
from eog_core.gateway._http_messages import Answer, Request, json_answer, request_of

__all__ = ["Answer", "HttpServer", "Request", "json_answer"]

log = logging.getLogger("eog_core.gateway")

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_MESSAGE_COST = 512  # bytes a queued request costs beyond its wire size (its objects)

Handler = Callable[[Request], Awaitable[Answer]]
Admit = Callable[[Request], Answer | None]
ErrorAnswer = Callable[[int, str], Answer]


class HttpServer:
    """Serve ``handler`` on one listening socket until :meth:`aclose`.

    ``admit`` sees each request once its head is read, before its body (a wrong token is
    refused before a byte of body is buffered); ``error`` builds the answer to a request
    the server refuses itself (its status and one line naming why); ``limits`` bound
    everything a peer sends."""

    def __init__(
        self, handler: Handler, *, admit: Admit, error: ErrorAnswer, limits: Limits | None = None
    ) -> None:
        self.handler = handler
        self.admit = admit
        self.error = error
        self.limits = limits or Limits()
        self.connections: set[_Connection] = set()
        self.handling: set[asyncio.Task[None]] = set()
        self.closing = False
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.bound: tuple[str, int] | None = None
        self.clock: Callable[[], float] = time.monotonic  # the event loop's (start sets it)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self.clock = loop_clock(loop)
        self._server = await loop.create_server(lambda: _Connection(self, loop), host, port)
        address = self._server.sockets[0].getsockname()
        self.bound = (str(address[0]), int(address[1]))
        self._sweeper = asyncio.create_task(self._sweep(), name="eog-gateway-http-timeouts")
        return self.bound

    async def aclose(self, shutdown_timeout: float) -> None:
        """Stop listening, close idle connections, let requests in flight answer (up to
        ``shutdown_timeout`` seconds; then they are cancelled), close the rest."""
        self.closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            if not connection.busy:
                connection.close()
        if self.handling:
            _, late = await asyncio.wait(set(self.handling), timeout=shutdown_timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self._server.wait_closed()
            self._server = None

    def admit_connection(self) -> bool:
        """Room for one more connection: under ``max_connections``, or once the connection
        idle longest is closed. False: none is idle (the newcomer is refused)."""
        if len(self.connections) < self.limits.max_connections:
            return True
        idle = [connection for connection in self.connections if connection.idle]
        if not idle:
            return False
        min(idle, key=lambda connection: connection.last).close()
        return True

    async def _sweep(self) -> None:
        """Close connections idle past ``idle_timeout``, or whose head has not arrived whole
        ``head_deadline`` seconds after its first byte, or whose body has stalled as long
        (a slow client cannot hold a connection open for ever)."""
        limits = self.limits
        period = max(0.05, min(limits.idle_timeout, limits.head_deadline) / 4)
        while True:
            await asyncio.sleep(period)
            now = self.clock()
            for connection in list(self.connections):
                if connection.busy:
                    continue
                reader = connection.reader
                if reader.mid_message and reader.head_only is None:
                    late = now - connection.started > limits.head_deadline
                elif reader.mid_message:
                    late = now - connection.last > limits.head_deadline
                else:
                    late = now - connection.last > limits.idle_timeout
                if late:
                    connection.close()


def loop_clock(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """``loop.time``, or ``time.monotonic`` itself when that is all it returns (asyncio's own
    loops: one Python call fewer each time a request is stamped)."""
    if getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time:
        return time.monotonic
    return loop.time


class _Connection(asyncio.Protocol):
    """One client connection: requests one at a time (pipelined ones wait their turn)."""

    def __init__(self, server: HttpServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.reader = RequestReader(server.limits, on_head=self._on_head)
        self.busy = False
        self.task: asyncio.Task[None] | None = None  # the request being handled
        self.early: Message | None = None  # a refused request answered before its body came
        self.continued: Message | None = None  # the request told ``100 Continue``
        self.reading_paused = False
        self.writing_paused = False
        self.eof = False
        self.lingering = -1  # bytes dropped since a refusal closed our side (-1: not closing)
        self.last = self.started = server.clock()
        self.local_host = ""

    @property
    def idle(self) -> bool:
        """Nothing in flight, nothing read and unanswered: free to close."""
        return not (self.busy or self.reader.mid_message or self.reader.ready)

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though not always an asyncio.Transport instance (uvloop's)
        self.transport = transport = cast(asyncio.Transport, transport)
        if self.server.closing:
            self.close()
            return
        if not self.server.admit_connection():
            limit = self.server.limits.max_connections
            answer = self.server.error(503, f"over {limit} connections at once; try again")
            transport.write(answer.encode(head_only=False, keep_alive=False))
            self.close()
            return
        address = transport.get_extra_info("sockname")
        host, port = str(address[0]), int(address[1])
        self.local_host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.server.connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self.lingering >= 0:
            self.lingering += len(data)
            if self.lingering > self.server.limits.max_skipped_body:
                self.close()
            return
        now = self.server.clock()
        self.last = now
        reader = self.reader
        fresh, begun = not reader.mid_message, reader.begun
        try:  # noqa: SIM105 (not contextlib.suppress: a context manager a request costs)
            reader.feed(data)
        except FramingError:  # kept by the reader: answered in its turn
            pass
        if fresh or reader.begun != begun:  # a request began in these bytes: its clock starts
            self.started = now
        self._next()

    def eof_received(self) -> bool:
        """The client closed its side: the whole requests it sent are still answered (then
        the connection closes); with none, the connection closes now."""
        self.eof = True
        return self.lingering < 0 and (self.busy or bool(self.reader.ready))

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server.connections.discard(self)

    def pause_writing(self) -> None:
        self.writing_paused = True
        self._flow()

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._next()

    # -- requests ----------------------------------------------------------------------------

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None
        self.server.connections.discard(self)

    def _flow(self) -> None:
        """Stop reading while the peer does not read its answers or has sent more than
        ``max_buffered`` ahead; read again once it has caught up."""
        transport = self.transport
        if transport is None or self.lingering >= 0:
            return
        reader = self.reader
        queued = reader.ready_bytes + _MESSAGE_COST * len(reader.ready)
        pause = self.writing_paused or queued > self.server.limits.max_buffered
        if pause != self.reading_paused:
            self.reading_paused = pause
            if pause:
                transport.pause_reading()
            else:
                transport.resume_reading()

    def _on_head(self, message: Message) -> bool:
        """A request's head is read: refuse it now (True: its body is dropped) or let its
        body come. The refusal is answered in its turn."""
        request = request_of(message, self.local_host)
        refusal: Answer | None
        if request is None:
            refusal = self.server.error(400, "bad request: the request target is not a path")
        elif message.too_large:
            limit = self.server.limits.max_request_body
            refusal = self.server.error(413, f"the request body is over {limit} bytes")
        else:
            expect = request.headers.get("expect")
            if expect is not None and message.version == "1.1" and expect.lower() != "100-continue":
                refusal = self.server.error(417, f"unknown Expect: {expect[:40]}")
            else:
                try:
                    refusal = self.server.admit(request)
                except Exception:  # a bug of ours: answered, never a hang
                    log.exception("gateway: admitting %s %s failed", message.method, request.path)
                    refusal = self.server.error(500, "the gateway failed on this request")
        message.note = (request, refusal)
        return refusal is not None

    def _next(self) -> None:
        """Answer what is read, in order: start the next whole request (one at a time),
        answer refusals (in a loop, not by recursion), tell a client waiting to send a body
        ``100 Continue``, answer a framing error and close."""
        reader = self.reader
        while self.transport is not None and not self.busy and not self.writing_paused:
            if self.server.closing:
                return
            message = reader.pop()
            if message is None:
                if not self._head_only():
                    break
                continue
            if message is self.early:
                self.early = None
                continue
            request, refusal = message.note
            if refusal is not None:
                self._answer(refusal, request, close=not _skippable(message))
                continue
            assert isinstance(request, Request)
            request.body = message.body
            request.keep_alive = request.keep_alive and message.keep_alive  # (an upgrade)
            self.busy = True
            self.task = self.loop.create_task(self._handle(request))
            self.server.handling.add(self.task)
            return
        self._flow()

    def _head_only(self) -> bool:
        """Nothing whole is left to answer: act on a head whose body is still to come, or on
        the reader's failure, or on the client's half-close. True: answered, look again."""
        reader = self.reader
        failed = reader.failed
        head = reader.head_only
        if failed is not None:
            if self.early is None:
                self._answer(self.server.error(failed.status, failed.message), None)
            else:
                self._linger()
            return False
        if self.eof:
            self.close()
            return False
        if head is None or head is self.early:
            return False
        request, refusal = head.note
        if refusal is not None:
            self.early = head
            self._answer(refusal, request, close=not _skippable(head))
            return True
        expect = (request.headers.get("expect") or "").lower()
        if self.continued is not head and head.version == "1.1" and expect == "100-continue":
            self.continued = head
            if self.transport is not None:
                self.transport.write(_CONTINUE)
        return False

    async def _handle(self, request: Request) -> None:
        try:
            answer = await self.server.handler(request)
        except Exception:  # the handler answers its own failures; this is a last resort
            log.exception("gateway: %s %s failed", request.method, request.path[:100])
            answer = self.server.error(500, "the gateway failed on this request; its log says why")
        finally:  # (no done callback: one event-loop handle fewer a request)
            if self.task is not None:
                self.server.handling.discard(self.task)
        self.busy = False
        self._answer(answer, request)
        reader = self.reader
        if reader.ready or reader.current is not None or reader.failed or self.reading_paused:
            self._next()  # (most often there is nothing: one call fewer a request)

    def _answer(self, answer: Answer, request: Request | None, *, close: bool = False) -> None:
        """Write ``answer``; close the connection after it when it or the request asks, or
        when it is the last answer owed to a client that closed its side."""
        transport = self.transport
        if transport is None:  # the client went away: its answer is dropped
            return
        close = (
            close
            or request is None
            or not request.keep_alive
            or self.server.closing
            or (self.eof and not self.reader.ready)
        )
        self.last = self.server.clock()  # idle from now, not from when the request arrived
        head_only = request is not None and request.method == "HEAD"
        transport.write(answer.encode(head_only=head_only, keep_alive=not close))
        if close:
            self._linger()

    def _linger(self) -> None:
        """Close; first, when the peer may still be sending (a refused request's body, bytes
        after a framing error), close only our side and drop what comes for a while, so the
        peer reads the answer rather than a reset."""
        transport = self.transport
        if transport is None:
            return
        reader = self.reader
        sending = reader.mid_message or reader.failed is not None
        if not sending or self.eof or not transport.can_write_eof():
            self.close()
            return
        self.lingering = 0
        transport.write_eof()
        if self.reading_paused:
            self.reading_paused = False
            transport.resume_reading()
        self.loop.call_later(self.server.limits.linger, self.close)


def _skippable(message: Message) -> bool:
    """Whether a refused request's body can be read and dropped, keeping the connection: not
    when it is chunked, or its client waits for ``100 Continue`` (it will never come), or its
    target was not understood."""
    request, _ = message.note
    if request is None or message.chunked:
        return False
    return (request.headers.get("expect") or "").lower() != "100-continue"
