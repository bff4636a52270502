"""A lean HTTP/1.1 client transport: asyncio protocols and pooled keep-alive connections.

aiohttp's client spends about 400k instructions on the machinery of one request
(callgrind, ``benchmarks/gateway_instructions.py``): more than the gym spends
answering it. :class:`LeanTransport` sends the same requests with one write and
reads the answer straight from the socket's buffer; the MCP gateway sends every
agent's tool call on to its gym with it. Same contract as
:class:`~eog_core.gym.AiohttpTransport`: typed errors only, the same retries
(:func:`~eog_core.gym._transport.next_attempt`), per-attempt timeouts and
deadlines, event streams read as they arrive.

What it is not: a general HTTP client. It speaks HTTP/1.1 to the gyms named in
a run (``http`` or ``https``), never follows redirects, uses no proxy and no
cookies (as our aiohttp session: ``trust_env=False``, a dummy cookie jar), asks
for no compression and refuses a compressed answer. It is strict where a lax
reading would be a guess: a malformed status line or header, both
``Content-Length`` and ``Transfer-Encoding``, two different lengths, a transfer
coding other than ``chunked`` or a malformed chunk size is a
:class:`~eog_core.errors.GymProtocolError`, and the connection is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlsplit

import attrs

from eog_core._version import __version__
from eog_core.errors import (
    ClosedError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    RequestError,
)
from eog_core.gym._http import (
    JSON_TYPE,
    Failed,
    HttpRequest,
    HttpResponse,
    decoded_body,
    encode_json,
    media_type,
    new_response,
    read_event_stream,
    status_failure,
)
from eog_core.gym._transport import _DEFAULT_RETRY, _KEEPALIVE_SECONDS, RetryPolicy, next_attempt

__all__ = ["LeanTransport"]

_HEAD_MAX = 64 * 1024
"""The most bytes an answer's status line and headers may take."""
_IDLE_MAX = 64
"""Idle connections kept per gym; more are closed as they come back."""
_LIMIT = 256
"""Connections open at once per transport (aiohttp's pool limit): more requests wait."""
_SMALL_BODY = 64 * 1024
"""Bodies up to this size are joined to the head and sent in one write."""
_NO_BODY_STATUSES = frozenset({204, 304})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_AGENT_LINE = f"User-Agent: eog-core/{__version__}\r\n"
_HEX = frozenset(b"0123456789abcdefABCDEF")


class _Lost(Exception):
    """Internal: the connection ended (or timed out) before the answer was whole."""


class _Malformed(Exception):
    """Internal: the answer breaks HTTP/1.1 framing; the message says how."""


@attrs.frozen
class _Target:
    """Where a URL's requests go: the pool key, the address, the request line's target."""

    key: tuple[str, str, int]
    host: str
    port: int
    tls: bool
    path: str
    host_header: str


@functools.lru_cache(maxsize=512)
def _target(url: str) -> _Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"{url!r}: only http and https URLs are supported")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{url!r}: credentials in a gym URL are not supported (use headers)")
    host = parts.hostname
    if not host:
        raise ValueError(f"{url!r}: no host")
    try:
        host.encode("idna")
    except UnicodeError as exc:
        raise ValueError(f"{url!r}: the host cannot be encoded ({exc})") from None
    port = parts.port or (443 if scheme == "https" else 80)
    default = port == (443 if scheme == "https" else 80)
    shown = f"[{host}]" if ":" in host else host
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(c in path for c in " \r\n\t\x00"):
        raise ValueError(f"{url!r}: the path holds whitespace or control characters")
    return _Target(
        key=(scheme, host, port),
        host=host,
        port=port,
        tls=scheme == "https",
        path=path,
        host_header=shown if default else f"{shown}:{port}",
    )


class _Headers(dict[str, str]):
    """An answer's headers: names lower-cased, looked up in any case (as aiohttp's)."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


_CHECKED_NAMES: set[str] = set()
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_OURS = frozenset({"host", "content-length", "transfer-encoding", "connection", "content-type"})


def _check_name(name: str) -> None:
    if not name or not set(name) <= _TOKEN:
        raise RequestError(f"header name {name!r} is not an HTTP token")
    if name.lower() in _OURS:
        raise RequestError(f"header {name!r} is set by the transport, not by the caller")
    if name.lower() == "user-agent" and len(_AGENT_NAMES) < 64:
        _AGENT_NAMES.add(name)
    if len(_CHECKED_NAMES) < 1024:
        _CHECKED_NAMES.add(name)


_METHODS = {"GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS"}
_AGENT_NAMES: set[str] = set()
"""The spellings of ``User-Agent`` callers have set (then ours is not added)."""


def _encode_head(request: HttpRequest, target: _Target, body: bytes | None) -> bytes:
    """The request line and headers, ending in the blank line; :class:`RequestError` when a
    header would break the framing (a CR or LF in a value, a name that is not a token)."""
    method, headers = request.method, request.headers
    if method not in _METHODS:
        if not method or not set(method) <= _TOKEN or method != method.upper():
            raise RequestError(f"HTTP method {method[:40]!r} is not an upper-case token")
        if len(_METHODS) < 64:
            _METHODS.add(method)
    for name in headers:
        if name not in _CHECKED_NAMES:
            _check_name(name)
    block = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
    if block.count("\n") != len(headers) or block.count("\r") != len(headers) or "\x00" in block:
        raise RequestError("a request header value holds a CR, LF or NUL (header injection)")
    if body is not None:
        framing = f"Content-Type: {JSON_TYPE}\r\nContent-Length: {len(body)}\r\n"
    elif request.method in _BODY_METHODS:
        framing = "Content-Length: 0\r\n"
    else:
        framing = ""
    agent = "" if _AGENT_NAMES and not _AGENT_NAMES.isdisjoint(headers) else _AGENT_LINE
    return (
        f"{method} {target.path} HTTP/1.1\r\nHost: {target.host_header}\r\n"
        f"{agent}{block}{framing}\r\n"
    ).encode()


class _Connection(asyncio.Protocol):
    """One keep-alive connection: what arrived waits in ``buffer`` until read."""

    __slots__ = (
        "buffer",
        "dropped",
        "ended",
        "error",
        "expired",
        "idle_since",
        "transport",
        "waiter",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.expired = False
        self.dropped = False
        self.error: BaseException | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self.transport = None
        self._wake()

    def expire(self) -> None:
        """The attempt's time is up: whoever waits wakes to :class:`_Lost`; the
        connection closes (an answer half read cannot be reused)."""
        self.expired = True
        self.close()

    def close(self) -> None:
        """Drop the connection from our side; a reader waiting on it wakes to :class:`_Lost`
        (at once: a TLS connection's ``connection_lost`` may come only after its shutdown)."""
        transport = self.transport
        if transport is not None:
            self.transport = None
            self.ended = self.dropped = True
            transport.close()
            self._wake()

    def usable(self) -> bool:
        transport = self.transport
        return transport is not None and not self.ended and not transport.is_closing()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def more(self) -> None:
        """Wait for more bytes; :class:`_Lost` when the connection ended or timed out."""
        if self.expired or self.ended:
            raise _Lost("timed out" if self.expired else self._why())
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self.waiter = None
        if self.expired:
            raise _Lost("timed out")

    def _why(self) -> str:
        return f"{self.error!r}" if self.error is not None else "the gym closed the connection"


@attrs.define(eq=False)
class _Framing:
    """How an answer's body ends: after ``length`` bytes, with the last chunk, or at EOF."""

    chunked: bool
    length: int | None  # None and not chunked: read until the connection ends


class _Body:
    """An answer's body as an async iterator of the chunks as they arrive (for event streams)."""

    __slots__ = ("conn", "done", "framing", "left")

    def __init__(self, conn: _Connection, framing: _Framing) -> None:
        self.conn, self.framing, self.done = conn, framing, False
        self.left = framing.length

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        if self.done:
            raise StopAsyncIteration
        conn, buffer = self.conn, self.conn.buffer
        if self.framing.chunked:
            chunk = await _next_chunk(conn)
            if not chunk:
                self.done = True
                raise StopAsyncIteration
            return chunk
        if self.left is not None:  # Content-Length
            if self.left == 0:
                self.done = True
                raise StopAsyncIteration
            while not buffer:
                await conn.more()
            piece = bytes(buffer[: self.left])
            del buffer[: len(piece)]
            self.left -= len(piece)
            return piece
        while not buffer:  # until the connection ends
            try:
                await conn.more()
            except _Lost:
                if conn.expired or conn.dropped or conn.error is not None:
                    raise  # timed out, closed by us, or reset: not the body's end
                self.done = True
                raise StopAsyncIteration from None
        piece = bytes(buffer)
        buffer.clear()
        return piece


async def _next_chunk(conn: _Connection) -> bytes:
    """One chunk of a chunked body (``b""`` for the last, its trailers read and dropped)."""
    buffer = conn.buffer
    while (line_end := buffer.find(b"\r\n")) < 0:
        if len(buffer) > 4096:
            raise _Malformed("a chunk-size line longer than 4096 bytes")
        await conn.more()
    size_text = bytes(buffer[:line_end]).partition(b";")[0].strip(b" \t")
    if not size_text or not set(size_text) <= _HEX or len(size_text) > 16:
        raise _Malformed(f"a malformed chunk size {size_text[:40]!r}")
    size = int(size_text, 16)
    del buffer[: line_end + 2]
    if size == 0:
        while True:  # trailers, up to the blank line
            while (line_end := buffer.find(b"\r\n")) < 0:
                if len(buffer) > _HEAD_MAX:
                    raise _Malformed("chunked trailers larger than 64 KiB")
                await conn.more()
            del buffer[: line_end + 2]
            if line_end == 0:
                return b""
    while len(buffer) < size + 2:
        await conn.more()
    if buffer[size : size + 2] != b"\r\n":
        raise _Malformed("a chunk not followed by CRLF")
    chunk = bytes(buffer[:size])
    del buffer[: size + 2]
    return chunk


_NAMES: dict[str, str] = {}
"""Header names seen in answers -> their lower-cased form (checked once: a token)."""


def _parse_head(head: bytes) -> tuple[int, bool, _Headers]:
    """Status, whether HTTP/1.1, and the headers of an answer's head (without the blank line)."""
    text = head.decode("latin-1")  # every byte decodes: the checks below are on the text
    status_line, _, rest = text.partition("\r\n")
    version = status_line[:9]
    code = status_line[9:12]
    if (
        version not in ("HTTP/1.1 ", "HTTP/1.0 ")
        or not (code.isascii() and code.isdigit())
        or len(code) != 3
        or status_line[12:13] not in ("", " ")
    ):
        raise _Malformed(f"a malformed status line {status_line[:80]!r}")
    fields: dict[str, str] = {}
    if rest:
        lines = rest.count("\r\n")  # no bare CR or LF, no NUL: every line ends in CRLF
        if rest.count("\r") != lines or rest.count("\n") != lines or "\x00" in rest:
            raise _Malformed("a bare CR, LF or NUL in the answer's headers")
        for line in rest.split("\r\n"):
            name, colon, value = line.partition(":")
            key = _NAMES.get(name)
            if key is None or not colon:
                if not colon or not name or not set(name) <= _TOKEN:  # also folded lines
                    raise _Malformed(f"a malformed header line {line[:80]!r}")
                key = name.lower()
                if len(_NAMES) < 1024:
                    _NAMES[name] = key
            value = value.strip(" \t")
            if key in fields:
                if key == "content-length":
                    if fields[key] != value:
                        raise _Malformed("two different Content-Length headers")
                    continue
                value = f"{fields[key]}, {value}"
            fields[key] = value
    return int(code), version == "HTTP/1.1 ", _Headers(fields)


def _framing(status: int, method: str, headers: _Headers) -> _Framing:
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return _Framing(chunked=False, length=0)
    coding = dict.get(headers, "transfer-encoding")
    length = dict.get(headers, "content-length")
    if coding is not None:
        if length is not None:
            raise _Malformed("both Content-Length and Transfer-Encoding")
        if coding.strip().lower() != "chunked":
            raise _Malformed(f"the transfer coding {coding!r} (only chunked is read)")
        return _Framing(chunked=True, length=None)
    if length is not None:
        if not (length.isascii() and length.isdigit()) or len(length) > 18:
            raise _Malformed(f"a malformed Content-Length {length[:40]!r}")
        return _Framing(chunked=False, length=int(length))
    return _Framing(chunked=False, length=None)


def _keeps_alive(http11: bool, headers: _Headers) -> bool:
    connection = dict.get(headers, "connection")
    if connection is None:
        return http11
    tokens = {token.strip().lower() for token in connection.split(",")}
    return "keep-alive" in tokens if not http11 else "close" not in tokens


@attrs.define(eq=False)
class LeanTransport:
    """Sends gym requests over its own keep-alive connections (see the module's docstring).

    One per event loop at a time (a second loop's first request drops the first loop's
    idle connections); :meth:`aclose` closes every connection it holds. ``ssl_context``
    is used for ``https`` gyms (the system's default trust when None).
    """

    retry: RetryPolicy = attrs.field(factory=lambda: _DEFAULT_RETRY)
    ssl_context: ssl.SSLContext | None = attrs.field(default=None, repr=False)
    keepalive: float = _KEEPALIVE_SECONDS
    """Seconds an idle connection is reused (below the gym server's own keep-alive)."""
    _idle: dict[tuple[str, str, int], list[_Connection]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _open: set[_Connection] = attrs.field(factory=set, init=False, repr=False)
    _slots: asyncio.Semaphore | None = attrs.field(default=None, init=False, repr=False)
    _loop: asyncio.AbstractEventLoop | None = attrs.field(default=None, init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)
    _keeper: AsyncGenerator[None, None] | None = attrs.field(default=None, init=False, repr=False)

    async def send(self, request: HttpRequest) -> HttpResponse:
        if self._closed:
            raise ClosedError(f"the transport was closed ({request.method} {request.url})")
        try:
            target = _target(request.url)
        except ValueError as exc:
            raise GymUnreachableError(
                f"invalid URL: {exc}", gym=request.gym, url=request.url
            ) from None
        body = None if request.json is None else encode_json(request.json)
        head = _encode_head(request, target, body)
        if body is not None and len(body) <= _SMALL_BODY:
            head, body = head + body, None
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._adopt(loop)
        budget = request.timeout
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._attempt(loop, target, head, body, request, budget)
            except Failed as exc:
                failure = exc
            delay, left = next_attempt(failure, request, attempt, self.retry)
            if left is not None:
                budget = left
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Close every connection (requests in flight fail with :class:`ClosedError`)."""
        self._closed = True
        self._drop_connections()
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            await keeper.aclose()
        await asyncio.sleep(0)  # the transports' connection_lost callbacks run

    # -- one attempt ---------------------------------------------------------------------------

    def _drop_connections(self) -> None:
        idle, self._idle = self._idle, {}
        for conn in [c for stack in idle.values() for c in stack] + list(self._open):
            try:
                conn.close()
            except RuntimeError:  # its event loop is closed (not by asyncio.run): nothing runs it
                conn.transport = None
        self._open.clear()

    def _adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start using ``loop``: the connections of the loop before are let go (``asyncio.run``
        closed them as it ended, through the keeper), and this loop gets a keeper of its own."""
        self._drop_connections()
        self._loop = loop
        self._slots = asyncio.Semaphore(_LIMIT)
        keeper = self._keeper = self._keep()
        with contextlib.suppress(StopIteration):  # run it to its yield: the loop now tracks it
            keeper.asend(None).send(None)

    async def _keep(self) -> AsyncGenerator[None, None]:
        """Parked at its ``yield`` while a loop uses this transport. The event loop closes
        async generators at shutdown (``asyncio.run`` does), and the connections close on
        that loop instead of leaking their sockets (as the aiohttp pool's ``_keep``)."""
        try:
            yield
        finally:
            self._drop_connections()

    async def _attempt(
        self,
        loop: asyncio.AbstractEventLoop,
        target: _Target,
        head: bytes,
        body: bytes | None,
        request: HttpRequest,
        budget: float,
    ) -> HttpResponse:
        slots = self._slots
        assert slots is not None
        started = loop.time()
        if slots.locked():  # _LIMIT requests in flight: wait for one, within the budget
            try:
                async with asyncio.timeout(budget):
                    await slots.acquire()
            except TimeoutError:
                raise Failed(
                    GymTimeoutError(
                        f"no answer within {request.timeout}s (every "
                        f"connection of the transport was busy)",
                        gym=request.gym,
                        url=request.url,
                    ),
                    sent=False,
                    transient=False,
                ) from None
        else:
            await slots.acquire()
        try:
            if self._closed:  # closed during a retry's backoff or the wait for a slot
                raise ClosedError(f"the transport was closed ({request.method} {request.url})")
            conn = self._pooled(target.key, time.monotonic())
            if conn is None:
                left = budget - (loop.time() - started)
                conn = await self._connect(
                    loop, target, request, min(request.connect_timeout, left)
                )
            timer = loop.call_at(started + budget, conn.expire)
            kept = False
            try:
                transport = conn.transport
                assert transport is not None
                transport.write(head)
                if body is not None:
                    transport.write(body)
                response, kept = await self._read(conn, request)
                return response
            except _Lost as exc:
                if self._closed:
                    raise ClosedError(
                        f"the transport was closed ({request.method} {request.url})"
                    ) from None
                if conn.expired:
                    raise Failed(
                        GymTimeoutError(
                            f"no answer within {request.timeout}s", gym=request.gym, url=request.url
                        ),
                        sent=True,
                        transient=False,
                    ) from None
                raise Failed(
                    GymProtocolError(
                        f"connection lost before the answer: {exc}",
                        gym=request.gym,
                        url=request.url,
                    ),
                    sent=True,
                    transient=True,
                ) from None
            except _Malformed as exc:
                raise Failed(
                    GymProtocolError(
                        f"malformed HTTP answer: {exc}", gym=request.gym, url=request.url
                    ),
                    sent=True,
                    transient=False,
                ) from None
            finally:
                timer.cancel()
                if kept and not self._closed:
                    self._park(target.key, conn)
                else:
                    conn.close()
                    self._open.discard(conn)
        finally:
            slots.release()

    def _pooled(self, key: tuple[str, str, int], now: float) -> _Connection | None:
        """An idle connection still open (and fresh: a gym closes idle ones after its keep-alive)."""
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            if conn.usable() and not conn.buffer and now - conn.idle_since < self.keepalive:
                return conn
            conn.close()
            self._open.discard(conn)
        return None

    def _park(self, key: tuple[str, str, int], conn: _Connection) -> None:
        if not conn.usable() or conn.buffer:  # closed by the gym, or it sent more than asked
            conn.close()
            self._open.discard(conn)
            return
        conn.idle_since = time.monotonic()
        stack = self._idle.setdefault(key, [])
        stack.append(conn)
        if len(stack) > _IDLE_MAX:
            oldest = stack.pop(0)
            oldest.close()
            self._open.discard(oldest)

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, target: _Target, request: HttpRequest, limit: float
    ) -> _Connection:
        context: ssl.SSLContext | None = None
        if target.tls:
            if self.ssl_context is None:  # made once: it loads the system's trust store
                self.ssl_context = ssl.create_default_context()
            context = self.ssl_context
        try:
            async with asyncio.timeout(max(limit, 0.0)):
                _, conn = await loop.create_connection(
                    _Connection,
                    target.host,
                    target.port,
                    ssl=context,
                    server_hostname=target.host if context is not None else None,
                )
        except TimeoutError:
            raise Failed(
                GymTimeoutError(
                    f"connect timed out after {request.connect_timeout}s",
                    gym=request.gym,
                    url=request.url,
                ),
                sent=False,
                transient=True,
            ) from None
        except (OSError, ssl.SSLError) as exc:
            failure = Failed(
                GymUnreachableError(f"cannot connect: {exc}", gym=request.gym, url=request.url),
                sent=False,
                transient=True,
            )
            raise failure from exc
        except ValueError as exc:  # UnicodeError included: an address the resolver refuses
            raise Failed(
                GymUnreachableError(f"cannot connect: {exc}", gym=request.gym, url=request.url),
                sent=False,
                transient=False,
            ) from exc
        if self._closed:  # closed while connecting: nothing is sent on a closed transport
            conn.close()
            raise ClosedError(f"the transport was closed ({request.method} {request.url})")
        self._open.add(conn)
        return conn

    async def _read(self, conn: _Connection, request: HttpRequest) -> tuple[HttpResponse, bool]:
        """The answer on ``conn`` and whether the connection may carry another request."""
        buffer = conn.buffer
        while True:
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                if len(buffer) > _HEAD_MAX:
                    raise _Malformed("an answer head larger than 64 KiB")
                await conn.more()
            if end > _HEAD_MAX:
                raise _Malformed("an answer head larger than 64 KiB")
            status, http11, headers = _parse_head(bytes(buffer[:end]))
            del buffer[: end + 4]
            if status == 101:
                raise _Malformed("101 Switching Protocols, though no upgrade was asked for")
            if not 100 <= status < 200:
                break  # interim answers (100 Continue, 103 Early Hints) are skipped
        encoding = dict.get(headers, "content-encoding")
        if encoding is not None and encoding.strip().lower() != "identity":
            raise _Malformed(
                f"a compressed answer (Content-Encoding: {encoding[:40]}), "
                "though none was asked for"
            )
        framing = _framing(status, request.method, headers)
        reusable = _keeps_alive(http11, headers) and (framing.chunked or framing.length is not None)
        if 200 <= status < 300 and not request.raw_body:
            content_type = media_type(dict.get(headers, "content-type"))
            if content_type == "text/event-stream":
                body = _Body(conn, framing)
                messages = await read_event_stream(body, request)
                response = HttpResponse(
                    status=status, headers=headers, messages=messages, is_event_stream=True
                )
                return response, reusable and body.done  # stopped early: the rest is unread
            raw = await _whole(conn, framing)
            return new_response(
                status, headers, decoded_body(raw, content_type, request), b""
            ), reusable
        raw = await _whole(conn, framing)
        if 200 <= status < 300:
            return new_response(status, headers, None, raw), reusable
        raise status_failure(status, raw, request)  # the connection is closed: errors are rare


async def _whole(conn: _Connection, framing: _Framing) -> bytes:
    """A whole body."""
    length, buffer = framing.length, conn.buffer
    if length is not None:
        while len(buffer) < length:
            await conn.more()
        raw = bytes(buffer[:length])
        del buffer[:length]
        return raw
    return b"".join([piece async for piece in _Body(conn, framing)])
