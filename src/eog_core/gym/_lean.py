"""A lean HTTP/1.1 client transport: asyncio protocols and pooled keep-alive connections.

aiohttp's client spends about 400k instructions on the machinery of one request
(callgrind, ``benchmarks/gateway_instructions.py``): more than the gym spends
answering it. :class:`LeanTransport` sends the same requests with one write and
reads the answer straight from the socket's buffer; the MCP gateway sends every
agent's tool call on to its gym with it. Same contract as
:class:`~eog_core.gym.AiohttpTransport`: typed errors only, the same retries
(:func:`~eog_core.gym._retry.next_attempt`), per-attempt timeouts and
deadlines, event streams read as they arrive.

What it is not: a general HTTP client. It speaks HTTP/1.1 to the gyms named in
a run (``http`` or ``https``), never follows redirects, uses no proxy and no
cookies (as our aiohttp session: ``trust_env=False``, a dummy cookie jar), asks
for no compression and refuses a compressed answer. It is strict where a lax
reading would be a guess: a malformed status line or header, both
``Content-Length`` and ``Transfer-Encoding``, two different lengths, a transfer
coding other than ``chunked`` or a malformed chunk size is a
:class:`~eog_core.errors.GymProtocolError`, and the connection is dropped.

This module is the pool and the attempts; the request's bytes are
:mod:`eog_core.gym._lean_request`, the connection's protocol
:mod:`eog_core.gym._lean_connection`, reading the answer :mod:`eog_core.gym._lean_answer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncGenerator

import attrs

from eog_core._http1 import Limits
from eog_core.errors import (
    ClosedError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
)
from eog_core.gym._http import Failed, HttpRequest, HttpResponse, encode_json
from eog_core.gym._lean_answer import MAX_BODY, read_answer
from eog_core.gym._lean_connection import Connection, Lost, Malformed
from eog_core.gym._lean_request import Target, encode_head, target_of
from eog_core.gym._retry import DEFAULT_RETRY, KEEPALIVE_SECONDS, RetryPolicy, next_attempt

__all__ = ["LeanTransport"]

_IDLE_MAX = 64
"""Idle connections kept per gym; more are closed as they come back."""
_LIMIT = 256
"""Connections open at once per transport (aiohttp's pool limit): more requests wait."""
_SMALL_BODY = 64 * 1024
"""Bodies up to this size are joined to the head and sent in one write."""


@attrs.define(eq=False)
class LeanTransport:
    """Sends gym requests over its own keep-alive connections (see the module's docstring).

    One per event loop at a time (a second loop's first request drops the first loop's
    idle connections); :meth:`aclose` closes every connection it holds. ``ssl_context``
    is used for ``https`` gyms (the system's default trust when None).
    """

    retry: RetryPolicy = attrs.field(factory=lambda: DEFAULT_RETRY)
    ssl_context: ssl.SSLContext | None = attrs.field(default=None, repr=False)
    keepalive: float = KEEPALIVE_SECONDS
    """Seconds an idle connection is reused (below the gym server's own keep-alive)."""
    max_body: int = attrs.field(default=MAX_BODY, validator=attrs.validators.gt(0))
    """The most bytes an answer's body may bring (an event stream's included); a gym
    answering more gets :class:`~eog_core.errors.GymProtocolError`, not retried."""
    _limits: Limits = attrs.field(init=False, repr=False)
    """The wire layer's bounds on answers (:mod:`eog_core._http1`), ``max_body`` among them."""
    _idle: dict[tuple[str, str, int], list[Connection]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _open: set[Connection] = attrs.field(factory=set, init=False, repr=False)
    _busy: int = attrs.field(default=0, init=False, repr=False)
    """Requests holding one of the ``_LIMIT`` slots (their attempt running)."""
    _waiting: deque[asyncio.Future[None]] = attrs.field(factory=deque, init=False, repr=False)
    """Requests waiting for a slot, in arrival order (a freed slot passes to the first)."""
    _loop: asyncio.AbstractEventLoop | None = attrs.field(default=None, init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)
    _keeper: AsyncGenerator[None, None] | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._limits = Limits(max_response_body=self.max_body)

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called (a closed transport refuses to send)."""
        return self._closed

    async def send(self, request: HttpRequest, *, retry: RetryPolicy | None = None) -> HttpResponse:
        """Send ``request`` with this transport's retries (or ``retry``'s)."""
        if self._closed:
            raise ClosedError(f"the transport was closed ({request.method} {request.url})")
        try:
            target = target_of(request.url)
        except ValueError as exc:
            raise GymUnreachableError(
                f"invalid URL: {exc}", gym=request.gym, url=request.url
            ) from None
        body = None if request.json is None else encode_json(request.json)
        head = encode_head(request, target, body)
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
            delay, left = next_attempt(failure, request, attempt, retry or self.retry)
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
        self._busy, self._waiting = 0, deque()
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
        target: Target,
        head: bytes,
        body: bytes | None,
        request: HttpRequest,
        budget: float,
    ) -> HttpResponse:
        started = loop.time()
        if self._busy < _LIMIT and not self._waiting:  # (no asyncio.Semaphore: a third
            self._busy += 1  # of its cost was its check for waiters, a generator)
        else:  # _LIMIT requests in flight: wait for one, within the budget
            await self._wait_for_slot(loop, budget, request)
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
                response, kept = await read_answer(conn, request)
                return response
            except Lost as exc:
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
            except Malformed as exc:
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
            self._release()

    async def _wait_for_slot(
        self, loop: asyncio.AbstractEventLoop, budget: float, request: HttpRequest
    ) -> None:
        """Wait (within ``budget``) until a request ends and passes its slot to this one."""
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(budget):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():  # passed a slot, then stopped
                self._release()
            else:
                waiter.cancel()
                with contextlib.suppress(ValueError):  # (a release may have dropped it)
                    self._waiting.remove(waiter)
            if isinstance(exc, TimeoutError):
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
            raise

    def _release(self) -> None:
        """A request's slot passes to the first still waiting, or is freed."""
        waiting = self._waiting
        while waiting:
            waiter = waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        if self._busy > 0:  # (a request of a loop before the last _adopt: already reset)
            self._busy -= 1

    def _pooled(self, key: tuple[str, str, int], now: float) -> Connection | None:
        """An idle connection still open (and fresh: a gym closes idle ones after its keep-alive)."""
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            if conn.usable() and now - conn.idle_since < self.keepalive and not conn.stale():
                return conn
            conn.close()
            self._open.discard(conn)
        return None

    def _park(self, key: tuple[str, str, int], conn: Connection) -> None:
        if not conn.usable():  # closed by the gym, or it sent more than asked
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
        self, loop: asyncio.AbstractEventLoop, target: Target, request: HttpRequest, limit: float
    ) -> Connection:
        context: ssl.SSLContext | None = None
        if target.tls:
            if self.ssl_context is None:  # made once: it loads the system's trust store
                self.ssl_context = ssl.create_default_context()
            context = self.ssl_context
        try:
            async with asyncio.timeout(max(limit, 0.0)):
                limits = self._limits
                _, conn = await loop.create_connection(
                    lambda: Connection(limits),
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
