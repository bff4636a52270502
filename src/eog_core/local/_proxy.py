"""A fault-injecting HTTP proxy to put in front of any gym: what networks and gateways do.

``FaultProxy(upstream=gym.url)`` forwards every request to the gym and, for a
chosen share of them (``rate``, drawn from a seeded generator) or for the next
requests named by :meth:`FaultProxy.inject`, misbehaves in one of the ways of
:class:`Fault`: lose the request before the gym sees it, answer 5xx, hold it
past the client's timeout and forward it anyway, or let the gym execute and
then lose, cut or replace its answer. A gym that cannot be reached gets a
``502`` like a real gateway. :meth:`FaultProxy.drain` waits for requests still
held or forwarded, so a test can audit the gym only once nothing is in flight.
"""

from __future__ import annotations

import asyncio
import enum
import json
import random
from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import aiohttp
import attrs
from aiohttp import web

from ._faults import drop_connection

__all__ = ["Fault", "FaultProxy"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "host",
        "upgrade",
        "proxy-connection",
        "te",
        "trailer",
        "accept-encoding",
        "content-encoding",
    }
)
_FAIL_STATUSES = (500, 502, 503, 504)


class Fault(enum.Enum):
    """What the proxy does to one request."""

    DROP_BEFORE = "drop_before"
    """Close the client's connection; the gym never sees the request."""
    FAIL_BEFORE = "fail_before"
    """Answer a 5xx; the gym never sees the request."""
    DELAY = "delay"
    """Hold the request ``delay`` seconds, then forward it even if the client gave up."""
    DROP_AFTER = "drop_after"
    """Forward; the gym executes; close the client's connection without an answer."""
    CUT_AFTER = "cut_after"
    """Forward; the gym executes; send the status, headers and half the body, then close."""
    FAIL_AFTER = "fail_after"
    """Forward; the gym executes; answer a 5xx instead of the gym's answer."""

    @property
    def reaches_gym(self) -> bool:
        return self not in (Fault.DROP_BEFORE, Fault.FAIL_BEFORE)


def _base_url(url: object) -> str:
    return str(url).rstrip("/")


@attrs.define
class _Queued:
    fault: Fault
    remaining: int
    path: str | None
    method: str | None

    def matches(self, path: str, method: str) -> bool:
        return self.path in (None, path) and self.method in (None, method)


@attrs.define(kw_only=True)
class FaultProxy:
    """An aiohttp reverse proxy on loopback: ``async with FaultProxy(upstream=url) as p: p.url``.

    ``rate`` is the share of requests (to ``paths`` only, if given) that meet a
    fault drawn from ``faults``; ``seed`` makes the draw repeatable.
    """

    upstream: str = attrs.field(converter=_base_url)
    host: str = "127.0.0.1"
    port: int = 0
    rate: float = 0.0
    faults: Sequence[Fault] = tuple(Fault)
    paths: Sequence[str] | None = None
    delay: float = 5.0
    seed: int | None = None
    upstream_timeout: float = 600.0
    injected: Counter[Fault] = attrs.field(factory=Counter, init=False)
    """How many requests met each fault so far."""
    faulted_methods: Counter[tuple[Fault, str]] = attrs.field(factory=Counter, init=False)
    """Faults per JSON-RPC method of the request ("" for requests that are not JSON-RPC)."""
    requests: int = attrs.field(default=0, init=False)
    _queued: list[_Queued] = attrs.field(factory=list, init=False, repr=False)
    _random: random.Random = attrs.field(init=False, repr=False)
    _runner: web.AppRunner | None = attrs.field(default=None, init=False, repr=False)
    _client: aiohttp.ClientSession | None = attrs.field(default=None, init=False, repr=False)
    _bound_port: int | None = attrs.field(default=None, init=False, repr=False)
    _in_flight: int = attrs.field(default=0, init=False, repr=False)
    _idle: asyncio.Event = attrs.field(factory=asyncio.Event, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.set_rate(self.rate)
        self._random = random.Random(self.seed)
        self._idle.set()

    @property
    def url(self) -> str:
        """Base URL of the proxy (only valid while it runs)."""
        if self._bound_port is None:
            raise RuntimeError("the proxy is not running")
        return f"http://{self.host}:{self._bound_port}"

    @property
    def in_flight(self) -> int:
        """Requests being held or forwarded right now."""
        return self._in_flight

    def set_rate(self, rate: float, faults: Sequence[Fault] | None = None) -> None:
        """Fault ``rate`` (0 to 1) of the requests, drawn from ``faults`` (default: all kinds)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be between 0 and 1")
        if faults is not None:
            self.faults = tuple(faults)
        if rate > 0 and not self.faults:
            raise ValueError("a positive rate needs at least one fault kind")
        self.rate = rate

    def inject(
        self, fault: Fault, count: int = 1, *, path: str | None = None, method: str | None = None
    ) -> None:
        """The next ``count`` requests (to ``path``, carrying JSON-RPC ``method``, when given)
        meet ``fault``."""
        if count < 1:
            raise ValueError("count must be at least 1")
        self._queued.append(_Queued(fault, count, path, method))

    def clear(self) -> None:
        """No more faults: rate 0 and nothing queued."""
        self.rate = 0.0
        self._queued.clear()

    async def drain(self) -> None:
        """Wait until no request is held or forwarded (bound it with ``asyncio.timeout``)."""
        await self._idle.wait()

    # -- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the proxy is already running")
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        self._client = aiohttp.ClientSession(
            connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
        )
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop serving (idempotent); requests still held are abandoned."""
        runner, self._runner = self._runner, None
        client, self._client = self._client, None
        self._bound_port = None
        try:
            if runner is not None:
                await runner.cleanup()
        finally:
            if client is not None:
                await client.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- proxying -----------------------------------------------------------

    def _choose(self, path: str, method: str) -> Fault | None:
        for rule in self._queued:
            if rule.matches(path, method):
                rule.remaining -= 1
                if rule.remaining <= 0:
                    self._queued.remove(rule)
                return rule.fault
        if self.rate <= 0 or (self.paths is not None and path not in self.paths):
            return None
        if self._random.random() >= self.rate:
            return None
        return self._random.choice(list(self.faults))

    def _fail(self, fault: Fault) -> web.Response:
        status = self._random.choice(_FAIL_STATUSES)
        when = "after" if fault.reaches_gym else "before"
        return web.json_response(
            {"detail": f"Injected fault: HTTP {status} ({when} forwarding)"}, status=status
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        body = await request.read()
        method = _method_of(body)
        fault = self._choose(request.path, method)
        if fault is not None:
            self.injected[fault] += 1
            self.faulted_methods[fault, method] += 1
        if fault is Fault.DROP_BEFORE:
            return drop_connection(request)
        if fault is Fault.FAIL_BEFORE:
            return self._fail(fault)
        self._in_flight += 1
        self._idle.clear()
        try:
            if fault is Fault.DELAY:
                await asyncio.sleep(self.delay)
            status, headers, answer = await self._forward(request, body)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()
        if fault is Fault.DROP_AFTER:
            return drop_connection(request)
        if fault is Fault.FAIL_AFTER:
            return self._fail(fault)
        if fault is Fault.CUT_AFTER and len(answer) > 1:
            return await _cut(request, status, headers, answer)
        return web.Response(status=status, headers=headers, body=answer)

    async def _forward(
        self, request: web.Request, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        client = self._client
        if client is None:
            raise web.HTTPServiceUnavailable(text="the proxy is stopping")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            async with client.request(
                request.method,
                self.upstream + request.rel_url.raw_path_qs,
                headers=headers,
                data=body or None,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.upstream_timeout),
            ) as answer:
                content = await answer.read()
                kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
                return answer.status, kept, content
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            detail = f"Bad Gateway: upstream {self.upstream} failed: {type(exc).__name__}"
            return 502, {"Content-Type": "application/json"}, _json_detail(detail)


async def _cut(
    request: web.Request, status: int, headers: dict[str, str], answer: bytes
) -> web.StreamResponse:
    response = web.StreamResponse(status=status, headers=headers)
    response.content_length = len(answer)
    await response.prepare(request)
    await response.write(answer[: len(answer) // 2])
    if request.transport is not None:
        request.transport.close()  # aiohttp's write_eof then meets a closed connection: skipped
    return response


def _method_of(body: bytes) -> str:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else ""


def _json_detail(detail: str) -> bytes:
    return json.dumps({"detail": detail}).encode()
