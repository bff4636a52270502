"""Sending HTTP requests to gyms: the connection pool and the default transport.

Every client shares one pool per event loop (leased while a transport is open, closed with
the last lease or, at the latest, when ``asyncio.run`` shuts its loop down). The pool holds
one :class:`~eog_core.gym.LeanTransport` (HTTP/1.1 on asyncio protocols, the framing
:mod:`eog_core._http1`): the default transport, :class:`PooledTransport`, sends on it. It
also holds an aiohttp session, made only when an :class:`AiohttpTransport` (the former
default, still there for whoever asks) first sends, and the MCP sessions that task sessions
share, ended when it closes. A transport used from a second event loop leases that loop's
pool. Retries: :mod:`eog_core.gym._retry`; reading aiohttp's answers and turning its errors
into ours: :mod:`eog_core.gym._http`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Protocol, Self

import aiohttp
import attrs
from aiohttp.payload import BytesPayload

from eog_core.errors import ClosedError
from eog_core.gym._http import (
    JSON_TYPE,
    Failed,
    HttpRequest,
    HttpResponse,
    classify_failure,
    client_timeout,
    encode_json,
    json_body,
    new_response,
    read,
)
from eog_core.gym._lean import LeanTransport
from eog_core.gym._retry import DEFAULT_RETRY, KEEPALIVE_SECONDS, RetryPolicy, next_attempt

__all__ = [
    "AiohttpTransport",
    "HttpRequest",
    "HttpResponse",
    "Pool",
    "PoolResource",
    "PooledTransport",
    "RetryPolicy",
    "Transport",
    "connection_pool",
    "lease_pool",
    "next_attempt",
    "release_pool",
]

log = logging.getLogger("eog_core.gym")


class Transport(Protocol):
    """Sends one request; raises only :class:`eog_core.errors.GymError` subclasses."""

    async def send(self, request: HttpRequest) -> HttpResponse: ...

    async def aclose(self) -> None: ...


class PoolResource(Protocol):
    """Something shared through the pool (an MCP session), ended before the pool closes."""

    async def aclose(self) -> None: ...


@attrs.define(eq=False)
class Pool:
    """One event loop's connections and the MCP sessions shared over them.

    ``lean`` is the default transport's; ``session``, aiohttp's, is made on first use (by an
    :class:`AiohttpTransport`). Leased while a client is open and closed with the last
    lease: first every shared resource ends (``DELETE`` of the shared MCP sessions), then
    the connections.
    """

    lean: LeanTransport = attrs.field(factory=LeanTransport)
    leases: int = 0
    shared: dict[Hashable, PoolResource] = attrs.field(factory=dict, repr=False)
    closed: bool = False
    loop: weakref.ref[asyncio.AbstractEventLoop] | None = attrs.field(default=None, repr=False)
    keeper: AsyncGenerator[None, None] | None = attrs.field(default=None, repr=False)
    ended: bool = False
    """Its connections are closed (``closed``: closing began, shared sessions ending)."""
    _session: aiohttp.ClientSession | None = attrs.field(default=None, repr=False)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pool's aiohttp session, made on first use."""
        session = self._session
        if session is None:
            if self.ended:  # nothing would close a session made now
                raise ClosedError("the connection pool was closed")
            connector = aiohttp.TCPConnector(
                limit=256, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS, ttl_dns_cache=300
            )
            session = self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
            )
        return session

    def usable(self) -> bool:
        """Open, and made by the running event loop."""
        return (
            not self.closed and self.loop is not None and self.loop() is asyncio.get_running_loop()
        )


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


def lease_pool() -> Pool:
    """The running loop's pool, leased: pair every call with :func:`release_pool`."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None or pool.closed:
        pool = _POOLS[loop] = Pool(loop=weakref.ref(loop))
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
    """Close ``pool`` once. The work runs as its own task that the closer awaits
    shielded: a closer cancelled (and cancelled again) while the shared MCP sessions
    end returns at once, and the HTTP session still stays open until every one of
    them has sent its ``DELETE`` (each bounded by its own close timeout)."""
    if pool.closed:
        return
    pool.closed = True
    loop = asyncio.get_running_loop()
    if _POOLS.get(loop) is pool:
        del _POOLS[loop]
    closing = asyncio.ensure_future(_finish(pool))
    _CLOSING.add(closing)
    closing.add_done_callback(_CLOSING.discard)
    await asyncio.shield(closing)


_CLOSING: set[asyncio.Future[None]] = set()  # pool closes kept alive past a cancelled closer


async def _finish(pool: Pool) -> None:
    resources = list(pool.shared.values())
    pool.shared.clear()
    try:
        ends = [asyncio.ensure_future(resource.aclose()) for resource in resources]
        if ends:
            await asyncio.wait(ends)  # together; one failing must not keep the others open
        for resource, end in zip(resources, ends, strict=True):
            failure = None if end.cancelled() else end.exception()
            if failure is not None and isinstance(failure, Exception):
                log.error(
                    "closing the connection pool: ending %r failed", resource, exc_info=failure
                )
    finally:
        pool.ended = True
        try:
            await pool.lean.aclose()
        finally:
            session = pool._session
            if session is not None:
                await session.close()
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
class _Leasing:
    """A transport sending on the running loop's pool: leased on first use (and again on a
    new event loop), given back on :meth:`aclose`; one made :meth:`on_pool` does not lease."""

    retry: RetryPolicy = attrs.field(factory=lambda: DEFAULT_RETRY)
    _pool: Pool | None = attrs.field(default=None, init=False, repr=False)
    _leased: bool = attrs.field(default=True, init=False, repr=False)

    @classmethod
    def on_pool(cls, pool: Pool, retry: RetryPolicy | None = None) -> Self:
        """A transport that sends on ``pool`` without leasing it (for what the pool owns)."""
        transport = cls(retry=retry or DEFAULT_RETRY)
        transport._pool, transport._leased = pool, False
        return transport

    def _lease(self) -> Pool:
        pool = self._pool
        if pool is None or (
            self._leased
            and (  # Pool.usable, without a call per request
                pool.closed or pool.loop is None or pool.loop() is not asyncio.get_running_loop()
            )
        ):
            # First use, or a new event loop (asyncio.run again): lease this loop's
            # pool. The old loop's pool was closed with that loop (see _keep).
            pool = self._pool = lease_pool()
        return pool

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


@attrs.define
class PooledTransport(_Leasing):
    """The default transport: the pool's :class:`~eog_core.gym.LeanTransport`, shared by
    every client on the event loop, with this transport's retries."""

    @property
    def lean(self) -> LeanTransport | None:
        """The pool's transport this one sends on (None before first use)."""
        return None if self._pool is None else self._pool.lean

    async def send(self, request: HttpRequest) -> HttpResponse:
        return await self._lease().lean.send(request, retry=self.retry)


@attrs.define
class AiohttpTransport(_Leasing):
    """The pool's aiohttp session, with retries (the default before the lean transport)."""

    @property
    def http_session(self) -> aiohttp.ClientSession | None:
        """The pooled aiohttp session this transport uses (None before first use)."""
        return None if self._pool is None else self._pool.session

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """Deprecated name of :attr:`http_session` ("session" names a TaskSession)."""
        warnings.warn(
            "AiohttpTransport.session is deprecated: read http_session",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.http_session

    async def send(self, request: HttpRequest) -> HttpResponse:
        session = self._lease().session
        data = None if request.json is None else encode_json(request.json)
        timeout = client_timeout(request.timeout, request.connect_timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                async with session.request(
                    request.method,
                    request.url,
                    data=None if data is None else BytesPayload(data, content_type=JSON_TYPE),
                    headers=request.headers,
                    timeout=timeout,
                    allow_redirects=False,
                ) as response:
                    if 200 <= response.status < 300:  # the usual answers, read here
                        if request.raw_body:
                            return new_response(
                                response.status, response.headers, None, await response.read()
                            )
                        if response.headers.get("Content-Type", "").startswith(JSON_TYPE):
                            return new_response(
                                response.status,
                                response.headers,
                                json_body(await response.read(), request),
                                b"",
                            )
                    return await read(response, request)
            except RuntimeError:
                if session.closed:  # what aiohttp raises before sending on a closed session
                    raise ClosedError(
                        f"the connection pool was closed ({request.method} {request.url})"
                    ) from None
                raise
            except Failed as exc:
                failure = exc
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                failure = classify_failure(exc, request)
            delay, left = next_attempt(failure, request, attempt, self.retry)
            if left is not None:
                timeout = aiohttp.ClientTimeout(
                    total=left, sock_connect=min(request.connect_timeout, left)
                )
            await asyncio.sleep(delay)
