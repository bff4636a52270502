"""One HTTP exchange with a gym, and the one place aiohttp errors become ours.

Every client shares one pooled :class:`aiohttp.ClientSession` per event loop
(leased while a transport is open, closed with the last lease or, at the
latest, when ``asyncio.run`` shuts its loop down); the pool also holds the MCP
sessions that task sessions share, ended when it closes. A transport used from
a second event loop leases that loop's pool. The transport
retries idempotent requests with jittered exponential backoff; a request that
is not idempotent (``tools/call``, seeding) is re-sent only when it provably
never left this process (the connection could not be opened).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import random
import weakref
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Hashable,
    Mapping,
)
from contextlib import asynccontextmanager
from typing import Any, Protocol

import aiohttp
import attrs
from aiohttp.payload import BytesPayload

from eog_core._json import loads_bytes
from eog_core._redact import redact_url
from eog_core.errors import (
    ClosedError,
    GymError,
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    RequestError,
)
from eog_core.gym._sse import SseParser

__all__ = [
    "AiohttpTransport",
    "HttpRequest",
    "HttpResponse",
    "Pool",
    "PoolResource",
    "RetryPolicy",
    "Transport",
    "connection_pool",
    "lease_pool",
    "release_pool",
]

log = logging.getLogger("eog_core.gym")

_TRANSIENT_STATUSES = frozenset({502, 503, 504})


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, separators=(",", ":"), allow_nan=False)``, built once.

    ``json.dumps`` builds its encoder on every call; CPython's C encoder is made
    once here. Circular data meets the recursion limit (RecursionError) instead
    of the circular check: a request body is never circular, and both are refused.
    """
    fallback = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    try:
        encode = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii,
                      None, ":", ",", False, False, False)
        if "".join(encode(_PROBE, 0)) != fallback(_PROBE):
            return fallback
    except TypeError:  # not CPython (None), or a C encoder that takes other arguments
        return fallback
    return lambda value: "".join(encode(value, 0))


_PROBE = {"a": [1, 2.5, None, True, "\u00e9\n"], "b": {"c": -0.0, "d": 1e300}}


_ENCODE = _compact_encoder()
_JSON = "application/json"
# Below uvicorn's 5 s keep-alive: never reuse a connection the server is closing.
_KEEPALIVE_SECONDS = 4.0


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Bounded, fully jittered exponential backoff."""

    attempts: int = 3
    initial_delay: float = 0.05
    max_delay: float = 1.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay, self.initial_delay * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)


_DEFAULT_RETRY = RetryPolicy()  # frozen: one shared by every default transport


@attrs.define(kw_only=True)
class HttpRequest:
    """One HTTP request; ``json`` (if not None) is sent as the JSON body. Read-only by
    convention (one is built per request: a frozen class would cost twice as much),
    and so are its ``headers``: a transport must not change them in place (clients
    reuse one header set for all the requests of a task).

    ``timeout`` bounds each attempt; with ``deadline`` (event-loop time, as
    ``loop.time()``) it is the whole request's budget, retries included: no
    attempt runs past the deadline and none starts after it (then
    :class:`GymTimeoutError`). ``sse_until`` stops reading an event stream at the
    first decoded message for which it returns true; ``on_message`` is awaited
    with each decoded message of an event stream first (to answer the server's
    own requests). With ``raw_body`` a 2xx body is not decoded at all: the answer
    carries it in ``raw`` only.
    """

    method: str
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    json: Any = attrs.field(default=None, repr=False)
    timeout: float = 60.0
    connect_timeout: float = 10.0
    idempotent: bool = True
    gym: str | None = None
    sse_until: Callable[[Any], bool] | None = None
    on_message: Callable[[Any], Awaitable[None]] | None = None
    raw_body: bool = False
    deadline: float | None = None


@attrs.define(kw_only=True)
class HttpResponse:
    """A 2xx answer: ``body`` is decoded JSON (text if not JSON, None if empty);
    ``messages`` holds the JSON messages of an event stream; ``raw`` the body
    bytes of a ``raw_body`` request. Read-only by convention, as :class:`HttpRequest`."""

    status: int
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Any = attrs.field(default=None, repr=False)
    messages: tuple[Any, ...] = attrs.field(default=(), repr=False)
    is_event_stream: bool = False
    raw: bytes = attrs.field(default=b"", repr=False)


class Transport(Protocol):
    """Sends one request; raises only :class:`eog_core.errors.GymError` subclasses."""

    async def send(self, request: HttpRequest) -> HttpResponse: ...

    async def aclose(self) -> None: ...


class _Failed(Exception):
    """Internal: one attempt failed; says whether the request may have left."""

    def __init__(self, error: GymError, *, sent: bool, transient: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.sent = sent
        self.transient = transient


class PoolResource(Protocol):
    """Something shared through the pool (an MCP session), ended before the pool closes."""

    async def aclose(self) -> None: ...


@attrs.define(eq=False)
class Pool:
    """One event loop's pooled HTTP session and the MCP sessions shared over it.

    Leased while a client is open and closed with the last lease: first every
    shared resource ends (``DELETE`` of the shared MCP sessions), then the
    HTTP session.
    """

    session: aiohttp.ClientSession
    leases: int = 0
    shared: dict[Hashable, PoolResource] = attrs.field(factory=dict, repr=False)
    closed: bool = False
    loop: weakref.ref[asyncio.AbstractEventLoop] | None = attrs.field(default=None, repr=False)
    keeper: AsyncGenerator[None, None] | None = attrs.field(default=None, repr=False)

    def usable(self) -> bool:
        """Open, and made by the running event loop."""
        return (not self.closed and self.loop is not None
                and self.loop() is asyncio.get_running_loop())


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


def lease_pool() -> Pool:
    """The running loop's pool, leased: pair every call with :func:`release_pool`."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None or pool.session.closed:
        connector = aiohttp.TCPConnector(
            limit=256, limit_per_host=0, keepalive_timeout=_KEEPALIVE_SECONDS, ttl_dns_cache=300
        )
        session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
        )
        pool = _POOLS[loop] = Pool(session=session, loop=weakref.ref(loop))
        pool.keeper = _keep(pool)
        with contextlib.suppress(StopIteration):  # run it to its yield: the loop now tracks it
            pool.keeper.asend(None).send(None)
    pool.leases += 1
    return pool


async def _keep(pool: Pool) -> AsyncGenerator[None, None]:
    """Parked at its ``yield`` for the pool's life. The event loop tracks async
    generators and closes them at shutdown (``asyncio.run`` does), so a pool
    still leased when its loop ends is closed on that loop (shared MCP sessions
    ended, sockets closed) instead of leaking."""
    try:
        yield
    finally:
        pool.keeper = None
        await _close(pool)


async def release_pool(pool: Pool) -> None:
    """Give a lease back; the last one ends the shared resources and closes the pool."""
    pool.leases -= 1
    if pool.leases <= 0:
        await _close(pool)


async def _close(pool: Pool) -> None:
    if pool.closed:
        return
    pool.closed = True
    loop = asyncio.get_running_loop()
    if _POOLS.get(loop) is pool:
        del _POOLS[loop]
    try:
        for resource in list(pool.shared.values()):
            try:
                await resource.aclose()
            except Exception:  # one failing resource must not keep the pool open
                log.exception("closing the connection pool: ending %r failed", resource)
        pool.shared.clear()
    finally:
        await pool.session.close()
        keeper, pool.keeper = pool.keeper, None
        if keeper is not None:
            await keeper.aclose()


@asynccontextmanager
async def connection_pool() -> AsyncIterator[None]:
    """Keep the shared pool (and its shared MCP sessions) open across clients that come and go."""
    pool = lease_pool()
    try:
        yield
    finally:
        await release_pool(pool)


@attrs.define
class AiohttpTransport:
    """The default transport: the shared aiohttp pool, with retries."""

    retry: RetryPolicy = attrs.field(factory=lambda: _DEFAULT_RETRY)
    _pool: Pool | None = attrs.field(default=None, init=False, repr=False)
    _leased: bool = attrs.field(default=True, init=False, repr=False)

    @classmethod
    def on_pool(cls, pool: Pool, retry: RetryPolicy | None = None) -> AiohttpTransport:
        """A transport that sends on ``pool`` without leasing it (for what the pool owns)."""
        transport = cls(retry=retry or _DEFAULT_RETRY)
        transport._pool, transport._leased = pool, False
        return transport

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The pooled session this transport uses (None before first use)."""
        return None if self._pool is None else self._pool.session

    async def send(self, request: HttpRequest) -> HttpResponse:
        if self._pool is None or (self._leased and not self._pool.usable()):
            # First use, or a new event loop (asyncio.run again): lease this loop's
            # pool. The old loop's pool was closed with that loop (see _keep).
            self._pool = lease_pool()
        session = self._pool.session
        data = None if request.json is None else encode_json(request.json)
        timeout = _client_timeout(request.timeout, request.connect_timeout)
        attempt = 0
        while True:
            attempt += 1
            if session.closed:  # aiohttp would raise RuntimeError
                raise ClosedError(f"the connection pool was closed ({request.method} {request.url})")
            try:
                async with session.request(
                    request.method,
                    request.url,
                    data=None if data is None else BytesPayload(data, content_type=_JSON),
                    headers=request.headers,
                    timeout=timeout,
                    allow_redirects=False,
                ) as response:
                    if 200 <= response.status < 300:  # the usual answers, read here
                        if request.raw_body:
                            return HttpResponse(status=response.status, headers=response.headers,
                                                raw=await response.read())
                        if response.headers.get("Content-Type", "").startswith(_JSON):
                            return HttpResponse(status=response.status, headers=response.headers,
                                                body=_json_body(await response.read(), request))
                    return await _read(response, request)
            except _Failed as exc:
                failure = exc
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                failure = _failure(exc, request)
            may_resend = request.idempotent or not failure.sent
            if not (failure.transient and may_resend and attempt < self.retry.attempts):
                raise failure.error from failure.__cause__
            delay = self.retry.delay(attempt)
            if request.deadline is not None:  # the next attempt gets what is left of the budget
                left = request.deadline - asyncio.get_running_loop().time() - delay
                if left <= 0:
                    raise GymTimeoutError(
                        f"no answer within {request.timeout}s ({attempt} attempt(s), the last: "
                        f"{failure.error})", gym=request.gym, url=request.url,
                    ) from failure.__cause__
                timeout = aiohttp.ClientTimeout(total=left,
                                                sock_connect=min(request.connect_timeout, left))
            log.debug("retrying %s %s after: %s", request.method, redact_url(request.url),
                      failure.error)
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        if not self._leased:
            return  # the pool's own transport: the pool ends it
        pool = self._pool
        if pool is not None and not pool.usable():
            self._pool = None  # another loop's pool, closed with that loop
        elif pool is not None:
            try:  # still usable while the pool ends what it shares through this transport
                await release_pool(pool)
            finally:
                self._pool = None


def encode_json(value: Any) -> bytes:
    """A request body as compact JSON; :class:`RequestError` when it cannot be (nothing sent)."""
    try:
        return _ENCODE(value).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise RequestError(f"request body is not valid JSON: {exc}") from exc


def _failure(exc: BaseException, request: HttpRequest) -> _Failed:
    """What one failed attempt means: whether it may have left, whether to try again."""
    gym, url = request.gym, request.url
    error: GymError
    if isinstance(exc, aiohttp.ClientConnectorError):
        error, sent, transient = GymUnreachableError(f"cannot connect: {exc}", gym=gym, url=url), False, True
    elif isinstance(exc, aiohttp.ConnectionTimeoutError):
        error = GymTimeoutError(f"connect timed out after {request.connect_timeout}s", gym=gym, url=url)
        sent, transient = False, True
    elif isinstance(exc, TimeoutError):
        error = GymTimeoutError(f"no answer within {request.timeout}s", gym=gym, url=url)
        sent, transient = True, False
    elif isinstance(exc, aiohttp.InvalidURL):
        error, sent, transient = GymUnreachableError(f"invalid URL: {exc}", gym=gym, url=url), False, False
    elif isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        if _write_refused(exc):
            error = GymUnreachableError(f"connection closed before sending: {exc}", gym=gym, url=url)
            sent, transient = False, True
        else:
            error = GymProtocolError(f"connection lost before the answer: {exc!r}", gym=gym, url=url)
            sent, transient = True, True
    elif isinstance(exc, aiohttp.ClientError):
        error, sent, transient = GymProtocolError(f"HTTP failure: {exc!r}", gym=gym, url=url), True, False
    elif isinstance(exc, OSError):
        error = GymProtocolError(f"connection failure: {exc!r}", gym=gym, url=url)
        sent, transient = True, True
    else:  # ValueError: aiohttp refused the request's parts (URL credentials + auth header)
        raise RequestError(f"the request could not be built: {exc}") from exc
    failure = _Failed(error, sent=sent, transient=transient)
    failure.__cause__ = exc
    return failure


def _json_body(raw: bytes, request: HttpRequest) -> Any:
    try:
        return _decode_body(raw, strict=True)
    except (ValueError, RecursionError) as exc:
        error = GymProtocolError(f"bad JSON in answer: {exc}", gym=request.gym, url=request.url)
        raise _Failed(error, sent=True, transient=False) from exc


def _write_refused(exc: BaseException) -> bool:
    """aiohttp refused to write (part of) the request to a closing connection.

    The request never fully left, so no server can have acted on it: a stale
    pooled connection to a gym that went away.
    """
    seen: BaseException | None = exc
    for _ in range(3):
        if seen is None:
            return False
        if isinstance(seen, aiohttp.ClientConnectionResetError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@functools.lru_cache(maxsize=64)
def _client_timeout(total: float, connect: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=total, sock_connect=connect)


async def _read(response: aiohttp.ClientResponse, request: HttpRequest) -> HttpResponse:
    status = response.status
    if not 200 <= status < 300:
        raw_error = await response.read()
        detail = _detail(raw_error)
        status_error = GymHTTPError(f"HTTP {status}: {detail}", status=status, detail=detail,
                                    raw=raw_error, gym=request.gym, url=request.url)
        raise _Failed(status_error, sent=True, transient=status in _TRANSIENT_STATUSES)
    if request.raw_body:
        return HttpResponse(status=status, headers=response.headers, raw=await response.read())
    content_type = _media_type(response.headers.get("Content-Type"))
    if content_type == "text/event-stream":
        messages = await _read_event_stream(response, request)
        return HttpResponse(
            status=status, headers=response.headers, messages=messages, is_event_stream=True
        )
    raw = await response.read()
    body = _json_body(raw, request) if "json" in content_type else _decode_body(raw, strict=False)
    return HttpResponse(status=status, headers=response.headers, body=body)


def _media_type(header: str | None) -> str:
    """The lower-cased media type of a ``Content-Type`` header (aiohttp's default when absent).

    What ``ClientResponse.content_type`` gives for the media types a gym sends,
    without parsing the parameters on every answer.
    """
    if not header:
        return "application/octet-stream"
    return header.partition(";")[0].strip().lower()


async def _read_event_stream(
    response: aiohttp.ClientResponse, request: HttpRequest
) -> tuple[Any, ...]:
    parser = SseParser()
    messages: list[Any] = []
    async for chunk in response.content.iter_any():
        for event in parser.feed(chunk):
            if event.event != "message":
                continue
            try:
                message = json.loads(event.data)
            except (ValueError, RecursionError) as exc:
                error = GymProtocolError(
                    f"bad JSON in event stream: {exc}", gym=request.gym, url=request.url
                )
                raise _Failed(error, sent=True, transient=False) from exc
            messages.append(message)
            if request.on_message is not None:
                await request.on_message(message)
            if request.sse_until is not None and request.sse_until(message):
                return tuple(messages)
    parser.close()
    return tuple(messages)


def _decode_body(raw: bytes, *, strict: bool) -> Any:
    if not raw or raw.isspace():  # no copy of a large body just to look at it
        return None
    try:
        return loads_bytes(raw)
    except (ValueError, RecursionError):
        if strict:
            raise
        return raw.decode("utf-8", errors="replace")


def _detail(raw: bytes) -> str:
    """The server's explanation: JSON ``detail``, ``message`` or ``error.message``, else text."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(body, dict):
        for key in ("detail", "message"):
            if body.get(key) is not None:
                value = body[key]
                return value if isinstance(value, str) else json.dumps(value)
        error = body.get("error")
        if isinstance(error, dict) and error.get("message") is not None:
            return str(error["message"])
    return text
