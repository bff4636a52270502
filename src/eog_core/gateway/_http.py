"""The gateway's HTTP/1.1 server: an asyncio protocol with one handler, nothing else.

Every tool call of every agent crosses this server, so it does only what the
gateway's routes need: the head parsed strictly (``_http_messages.py``), a ``Content-Length`` or chunked body read whole (bounded), keep-alive,
``Expect: 100-continue``, HEAD, and one answer written with a single
``transport.write``. aiohttp's server did the same work in about 230k
instructions a request; this one in a fraction (docs/performance.md).

Strict where a lenient parser is an attack surface: a request with both
``Content-Length`` and ``Transfer-Encoding``, two different lengths, a
transfer coding other than ``chunked``, folded header lines, bare CR or LF, NUL
bytes, or a head over :data:`MAX_HEAD_BYTES` is refused (400, 431, 501, 505) and
its connection closed. A body over the limit is answered 413 before it is read
(its ``Content-Length`` bytes are then skipped, so the connection stays usable).
An idle keep-alive connection is closed after ``idle_timeout`` seconds, a
request whose head or body stops arriving after ``read_timeout`` seconds. A
client that goes away does not cancel its request's handler (a finish that is
verifying completes and is recorded); its answer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from eog_core.gateway._http_messages import (
    MAX_HEAD_BYTES,
    Answer,
    ChunkedBody,
    Refused,
    Request,
    content_length,
    json_answer,
    parse_head,
)

__all__ = ["Answer", "HttpServer", "Request", "json_answer"]

log = logging.getLogger("eog_core.gateway")

IDLE_TIMEOUT = 75.0  # seconds a keep-alive connection may sit idle (aiohttp's default)
READ_TIMEOUT = 30.0  # seconds a started request may take to arrive whole
_BUFFERED_MAX = 4 * 1024 * 1024  # bytes read ahead while a request is handled, then reading pauses
_SKIP_MAX = 64 * 1024 * 1024  # a refused body up to this is read and dropped; a larger one closes
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

Handler = Callable[[Request], Awaitable[Answer]]
Admit = Callable[[Request], Answer | None]
ErrorAnswer = Callable[[int, str], Answer]


class HttpServer:
    """Serve ``handler`` on one listening socket until :meth:`aclose`.

    ``admit`` sees each request once its head is read, before its body (a wrong token is
    refused before a byte of body is buffered); ``error`` builds the answer to a request
    the server refuses itself (its status and one line naming why)."""

    def __init__(
        self,
        handler: Handler,
        *,
        admit: Admit,
        error: ErrorAnswer,
        max_body: int,
        idle_timeout: float = IDLE_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.handler = handler
        self.admit = admit
        self.error = error
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.read_timeout = read_timeout
        self.connections: set[_Connection] = set()
        self.handling: set[asyncio.Task[None]] = set()
        self.closing = False
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.bound: tuple[str, int] | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
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

    async def _sweep(self) -> None:
        """Close connections idle past ``idle_timeout`` or stalled mid-request past
        ``read_timeout`` (a slow client cannot hold a connection open for ever)."""
        loop = asyncio.get_running_loop()
        period = max(0.05, min(self.idle_timeout, self.read_timeout) / 4)
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for connection in list(self.connections):
                if connection.busy:
                    continue
                limit = self.read_timeout if connection.buffer else self.idle_timeout
                if now - connection.last > limit:
                    connection.close()


class _Connection(asyncio.Protocol):
    """One client connection: requests one at a time (pipelined ones wait their turn)."""

    def __init__(self, server: HttpServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False
        self.discard = 0  # body bytes of a refused request still to skip
        self.pending: Request | None = None  # a request whose head is read, its body not yet
        self.pending_end = 0  # where its head ends in the buffer
        self.chunked: ChunkedBody | None = None  # its chunked body as decoded so far
        self.task: asyncio.Task[None] | None = None  # the request being handled
        self.reading_paused = False
        self.writing_paused = False
        self.eof = False
        self.last = loop.time()
        self.local_host = ""

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        address = transport.get_extra_info("sockname")
        host, port = str(address[0]), int(address[1])
        self.local_host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.server.connections.add(self)
        if self.server.closing:
            self.close()

    def data_received(self, data: bytes) -> None:
        self.last = self.loop.time()
        if self.discard:
            skipped = min(self.discard, len(data))
            self.discard -= skipped
            data = data[skipped:]
            if not data:
                return
        self.buffer += data
        if not self.busy:
            self._next()
        elif len(self.buffer) > _BUFFERED_MAX and self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True

    def eof_received(self) -> bool:
        """The client closed its side: a request being handled is still answered (then the
        connection closes); otherwise the connection closes now."""
        self.eof = True
        return self.busy

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server.connections.discard(self)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if not self.busy:
            self._next()

    # -- requests ----------------------------------------------------------------------------

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _next(self) -> None:
        """Start the next whole request in the buffer, if there is one and none is running
        (requests the server refuses itself are answered here, in a loop, not by recursion)."""
        while self.transport is not None and not self.writing_paused and not self.server.closing:
            try:
                request = self._read()
            except Refused as refused:
                answer = refused.answer or self.server.error(refused.status, refused.message)
                self._answer(answer, refused.request, close=refused.close)
                continue
            if request is None:
                if self.reading_paused and self.transport is not None:
                    self.reading_paused = False
                    self.transport.resume_reading()
                return
            self.busy = True
            self.task = self.loop.create_task(self._handle(request))
            self.server.handling.add(self.task)
            return

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
        if self.buffer or self.reading_paused:
            self._next()

    def _answer(self, answer: Answer, request: Request | None, *, close: bool = False) -> None:
        """Write ``answer``; close the connection after it when it or the request asks."""
        transport = self.transport
        if transport is None:  # the client went away: its answer is dropped
            return
        close = (
            close or request is None or not request.keep_alive or self.server.closing or self.eof
        )
        self.last = self.loop.time()  # idle from now, not from when the request arrived
        transport.write(
            answer.encode(
                head_only=request is not None and request.method == "HEAD", keep_alive=not close
            )
        )
        if close:
            transport.close()
            self.transport = None

    def _read(self) -> Request | None:
        """The next request if it is whole in the buffer (its body removed from it), else None
        (a head read is kept in ``pending``). Raises Refused."""
        request = self.pending
        if request is None:
            request = self._head()
            if request is None:
                return None
            expect = request.headers.get("expect")
            if (
                expect is not None
                and request.version == "HTTP/1.1"
                and expect.lower() != "100-continue"
            ):
                refusal: Answer | None = self.server.error(417, f"unknown Expect: {expect[:40]}")
            else:
                refusal = self.server.admit(request)
            if refusal is not None:
                kept = self._skip_body(request)
                raise Refused(refusal.status, "", close=not kept, answer=refusal, request=request)
        return self._body(request)

    def _head(self) -> Request | None:
        buffer = self.buffer
        while buffer[:2] == b"\r\n":  # empty lines before a request line are ignored
            del buffer[:2]
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                raise Refused(431, "the request's head is too large")
            return None
        if end > MAX_HEAD_BYTES:
            raise Refused(431, "the request's head is too large")
        request = parse_head(buffer[:end].decode("latin-1"), self.local_host)
        self.pending_end = end + 4
        return request

    def _body(self, request: Request) -> Request | None:
        headers, buffer, start = request.headers, self.buffer, self.pending_end
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if "content-length" in headers:
                raise Refused(400, "bad request: both Content-Length and Transfer-Encoding")
            if coding.lower() != "chunked":
                raise Refused(501, f"transfer coding not supported: {coding[:40]}")
            if self.chunked is None:
                self.chunked = ChunkedBody(start, self.server.max_body)
            decoded = self.chunked.feed(buffer)
            if decoded is None:
                self._wait(request)
                return None
            body, end = decoded
        else:
            length = content_length(headers.get("content-length"))
            if length > self.server.max_body:
                kept = self._skip_body(request)
                raise Refused(
                    413,
                    f"the request body is over {self.server.max_body} bytes",
                    close=not kept,
                    request=request,
                )
            end = start + length
            if len(buffer) < end:
                self._wait(request)
                return None
            body = bytes(buffer[start:end])
        del buffer[:end]
        self.pending = self.chunked = None
        request.body = body
        return request

    def _wait(self, request: Request) -> None:
        """The body is not all here yet: keep the head, and answer ``100 Continue`` once."""
        if self.pending is None:
            self.pending = request
            if (
                request.version == "HTTP/1.1"
                and self.transport is not None
                and request.headers.get("expect", "").lower() == "100-continue"
            ):
                self.transport.write(_CONTINUE)

    def _skip_body(self, request: Request) -> bool:
        """Drop a refused request's body (what is read, and what is still to come) so the next
        request on the connection parses; False when the connection must close instead (a
        chunked body, a client waiting for ``100 Continue``, a body too large to skip)."""
        start, self.pending, self.chunked = self.pending_end, None, None
        headers = request.headers
        if "transfer-encoding" in headers or headers.get("expect", "").lower() == "100-continue":
            return False
        length = content_length(headers.get("content-length"))
        if length > _SKIP_MAX:
            return False
        have = len(self.buffer) - start
        del self.buffer[: start + min(have, length)]
        self.discard = max(0, length - have)
        return True
