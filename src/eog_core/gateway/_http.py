"""The gateway's HTTP/1.1 server: an asyncio protocol with one handler, nothing else.

Every tool call of every agent crosses this server, so it does only what the
gateway's routes need: the request line and headers parsed with a few byte
splits, a ``Content-Length`` or chunked body read whole (bounded), keep-alive,
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
import http
import logging
import re
import time
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote

from eog_core._mcp_server import dumps

__all__ = ["Answer", "HttpServer", "Request", "json_answer"]

log = logging.getLogger("eog_core.gateway")

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
IDLE_TIMEOUT = 75.0  # seconds a keep-alive connection may sit idle (aiohttp's default)
READ_TIMEOUT = 30.0  # seconds a started request may take to arrive whole
_BUFFERED_MAX = 4 * 1024 * 1024  # bytes read ahead while a request is handled, then reading pauses
_SKIP_MAX = 64 * 1024 * 1024  # a refused body up to this is read and dropped; a larger one closes
_REASONS = {status.value: status.phrase.encode() for status in http.HTTPStatus}
_JSON = "application/json; charset=utf-8"
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's ``token``)."""
_NAMES: dict[str, str] = {}
"""Header names as sent, checked, to their lower-cased keys (the few a client sends: a
dictionary lookup a header instead of a check and a ``lower()``); bounded."""
_NAMES_KEPT = 1024
_REQUEST_LINE = re.compile(r"([A-Z]+) ([^\x00-\x20\x7f]+) (HTTP/[0-9]\.[0-9])")


class Request:
    """One request, read whole: header names lower-cased (a repeated header's values joined
    with ``", "``), the path percent-decoded without its query."""

    __slots__ = ("body", "headers", "host", "keep_alive", "method", "path", "version")

    def __init__(self, method: str, path: str, version: str, headers: dict[str, str],
                 host: str) -> None:
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.host = host
        """The ``Host`` the client asked for (the bound address when it sent none)."""
        self.body = b""
        connection = headers.get("connection", "").lower()
        self.keep_alive = ("close" not in connection if version == "HTTP/1.1"
                           else "keep-alive" in connection)

    def origin(self) -> str:
        """``http://host[:port]`` as the client addressed this server."""
        return f"http://{self.host}"


class Answer:
    """A response: status, body bytes, content type and extra headers. ``close`` ends the
    connection after it."""

    __slots__ = ("body", "close", "content_type", "headers", "status")

    def __init__(self, status: int = 200, body: bytes = b"", *, content_type: str | None = None,
                 headers: dict[str, str] | None = None, close: bool = False) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers
        self.close = close

    def encode(self, *, head_only: bool, keep_alive: bool) -> bytes:
        lines = [b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nDate: %s\r\n"
                 % (self.status, _REASONS.get(self.status, b"Unknown"), len(self.body), _date())]
        if self.content_type is not None:
            lines.append(b"Content-Type: %s\r\n" % self.content_type.encode())
        if self.headers:
            lines.extend(f"{name}: {value}\r\n".encode() for name, value in self.headers.items())
        lines.append(b"\r\n" if keep_alive else b"Connection: close\r\n\r\n")
        if not head_only:
            lines.append(self.body)
        return b"".join(lines)


def json_answer(value: Any, status: int = 200, *, headers: dict[str, str] | None = None) -> Answer:
    """``value`` as a JSON answer."""
    return Answer(status, dumps(value).encode(), content_type=_JSON, headers=headers)


_date_cache: list[Any] = [0, b""]


def _date() -> bytes:
    """The ``Date`` header's value, formatted once a second."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[:] = [now, formatdate(now, usegmt=True).encode()]
    return _date_cache[1]  # type: ignore[no-any-return]


class Refused(Exception):
    """A request refused by the server itself (malformed, too large): the answer, and
    whether the connection must close after it."""

    def __init__(self, status: int, message: str, *, close: bool = True,
                 answer: Answer | None = None, request: Request | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close
        self.answer = answer
        """The answer to give (built by the server's ``error`` when None)."""
        self.request = request
        """The refused request when its head was read (None: the head itself was malformed)."""


Handler = Callable[[Request], Awaitable[Answer]]
Admit = Callable[[Request], Answer | None]
ErrorAnswer = Callable[[int, str], Answer]


class HttpServer:
    """Serve ``handler`` on one listening socket until :meth:`aclose`.

    ``admit`` sees each request once its head is read, before its body (a wrong token is
    refused before a byte of body is buffered); ``error`` builds the answer to a request
    the server refuses itself (its status and one line naming why)."""

    def __init__(self, handler: Handler, *, admit: Admit, error: ErrorAnswer,
                 max_body: int, idle_timeout: float = IDLE_TIMEOUT,
                 read_timeout: float = READ_TIMEOUT) -> None:
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
        self.reading_paused = False
        self.writing_paused = False
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
            task = self.loop.create_task(self._handle(request))
            self.server.handling.add(task)
            task.add_done_callback(self.server.handling.discard)
            return

    async def _handle(self, request: Request) -> None:
        try:
            answer = await self.server.handler(request)
        except Exception:  # the handler answers its own failures; this is a last resort
            log.exception("gateway: %s %s failed", request.method, request.path[:100])
            answer = self.server.error(500, "the gateway failed on this request")
        self.busy = False
        self._answer(answer, request)
        if self.buffer or self.reading_paused:
            self._next()

    def _answer(self, answer: Answer, request: Request | None, *, close: bool = False) -> None:
        """Write ``answer``; close the connection after it when it or the request asks."""
        transport = self.transport
        if transport is None:  # the client went away: its answer is dropped
            return
        close = (close or answer.close or request is None or not request.keep_alive
                 or self.server.closing)
        transport.write(answer.encode(head_only=request is not None and request.method == "HEAD",
                                      keep_alive=not close))
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
            if expect is not None and request.version == "HTTP/1.1" and expect.lower() != "100-continue":
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
        text = buffer[:end].decode("latin-1")
        line, _, block = text.partition("\r\n")
        first = _REQUEST_LINE.fullmatch(line)
        if first is None:
            raise Refused(400, "bad request: a malformed request line")
        method, target, version = first.groups()
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise Refused(505, f"HTTP version not supported: {version[:20]}")
        headers: dict[str, str] = {}
        if block:
            lines = block.split("\r\n")
            if len(lines) > MAX_HEADERS:
                raise Refused(431, f"more than {MAX_HEADERS} request headers")
            if not block.count("\r") == block.count("\n") == len(lines) - 1 or "\0" in block:
                raise Refused(400, "bad request: a bare CR, LF or NUL in the request's head")
            names = _NAMES
            for field in lines:
                name, colon, value = field.partition(":")
                key = names.get(name) or _header_key(name)
                if not colon:
                    raise Refused(400, "bad request: a header line without a colon")
                if key in headers:
                    headers = _merged(lines)
                    break
                headers[key] = value.strip(" \t")
        if not target.startswith("/"):
            scheme, sep, rest = target.partition("://")
            if not sep or scheme.lower() not in ("http", "https"):
                raise Refused(400, "bad request: the request target is not a path")
            target = "/" + rest.partition("/")[2]
        path = target.partition("?")[0]
        if "%" in path:
            path = unquote(path)
        request = Request(method, path, version, headers,
                          headers.get("host") or self.local_host)
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
            decoded = self._chunked(start, request)
            if decoded is None:
                self._wait(request)
                return None
            body, end = decoded
        else:
            length = _content_length(headers.get("content-length"))
            if length > self.server.max_body:
                kept = self._skip_body(request)
                raise Refused(413, f"the request body is over {self.server.max_body} bytes",
                              close=not kept, request=request)
            end = start + length
            if len(buffer) < end:
                self._wait(request)
                return None
            body = bytes(buffer[start:end])
        del buffer[:end]
        self.pending = None
        request.body = body
        return request

    def _wait(self, request: Request) -> None:
        """The body is not all here yet: keep the head, and answer ``100 Continue`` once."""
        if self.pending is None:
            self.pending = request
            if (request.version == "HTTP/1.1" and self.transport is not None
                    and request.headers.get("expect", "").lower() == "100-continue"):
                self.transport.write(_CONTINUE)

    def _chunked(self, start: int, request: Request) -> tuple[bytes, int] | None:
        """The decoded body and where it ends, or None while incomplete. Raises Refused."""
        buffer, size, at = self.buffer, 0, start
        pieces: list[bytes] = []
        while True:
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                if len(buffer) - at > 1024:
                    raise Refused(400, "bad request: a malformed chunk size")
                return None
            size_text = bytes(buffer[at:line_end]).partition(b";")[0].strip()
            try:
                chunk = int(size_text, 16)
            except ValueError:
                raise Refused(400, "bad request: a malformed chunk size") from None
            if chunk < 0 or not size_text.isalnum():
                raise Refused(400, "bad request: a malformed chunk size")
            at = line_end + 2
            if chunk == 0:
                trailer_end = buffer.find(b"\r\n\r\n", at - 2)
                if trailer_end < 0:
                    return None
                return b"".join(pieces), trailer_end + 4
            size += chunk
            if size > self.server.max_body:
                raise Refused(413, f"the request body is over {self.server.max_body} bytes")
            if len(buffer) < at + chunk + 2:
                return None
            if buffer[at + chunk:at + chunk + 2] != b"\r\n":
                raise Refused(400, "bad request: a chunk without its CRLF")
            pieces.append(bytes(buffer[at:at + chunk]))
            at += chunk + 2

    def _skip_body(self, request: Request) -> bool:
        """Drop a refused request's body (what is read, and what is still to come) so the next
        request on the connection parses; False when the connection must close instead (a
        chunked body, a client waiting for ``100 Continue``, a body too large to skip)."""
        start, self.pending = self.pending_end, None
        headers = request.headers
        if ("transfer-encoding" in headers
                or headers.get("expect", "").lower() == "100-continue"):
            return False
        length = _content_length(headers.get("content-length"))
        if length > _SKIP_MAX:
            return False
        have = len(self.buffer) - start
        del self.buffer[:start + min(have, length)]
        self.discard = max(0, length - have)
        return True


def _header_key(name: str) -> str:
    """The key of a header name not seen before, once it is checked to be a token."""
    if _TOKEN.fullmatch(name) is None:  # no colon, a space before it, a folded line
        raise Refused(400, "bad request: a malformed header line")
    key = name.lower()
    if len(_NAMES) < _NAMES_KEPT:
        _NAMES[name] = key
    return key


def _merged(lines: list[str]) -> dict[str, str]:
    """Headers with repeated names: values joined with ", "; two different lengths or hosts
    are refused (a request smuggling vector)."""
    headers: dict[str, str] = {}
    for field in lines:
        name, colon, value = field.partition(":")
        if not colon:
            raise Refused(400, "bad request: a header line without a colon")
        key, value = _NAMES.get(name) or _header_key(name), value.strip(" \t")
        if key not in headers:
            headers[key] = value
        elif key in ("content-length", "host"):
            if headers[key] != value:
                raise Refused(400, f"bad request: two different {key} headers")
        else:
            headers[key] = f"{headers[key]}, {value}"
    return headers


def _content_length(value: str | None) -> int:
    if value is None:
        return 0
    if not value.isdigit() or not value.isascii() or len(value) > 18:
        raise Refused(400, "bad request: a malformed Content-Length")
    return int(value)
