"""An OpenAI-compatible model endpoint over one pooled aiohttp session.

Retries 408/409/429/5xx answers, timeouts and connection failures with
exponential backoff and jitter, honouring ``Retry-After`` (seconds or an HTTP
date) and ``retry-after-ms``; a request that no longer fits the context window
raises :class:`ContextOverflowError` at once; a tool call the server could not
parse (llama.cpp's 500, vLLM's tool-parser errors) is retried once, then raises
:class:`ToolCallParseError`; other 4xx raise :class:`ModelHTTPError`.

A dead or hung endpoint is given up on quickly: a request that receives nothing
for ``idle_timeout`` seconds is checked with a ``GET /models`` probe (a server
still generating answers it; a hung or stopped one does not), and once every
request has failed at the transport level for ``unreachable_after`` seconds the
client stops retrying (:class:`ModelUnreachableError`) instead of backing off for
minutes; a busy server (429, 5xx answers) keeps its full retries. The API key
goes into the ``Authorization`` header and nowhere else: it is not in any repr,
log line or error message.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs

from eog_core._json import dumps_utf8, may_hold_lone_surrogates, repair_tree
from eog_core._redact import redact_url
from eog_core.errors import (
    ContextOverflowError,
    ModelError,
    ModelHTTPError,
    ModelUnreachableError,
    ToolCallParseError,
)
from eog_core.run._answers import (
    RETRY_STATUSES,
    Answer,
    Hung,
    backend_missing,
    error_detail,
    is_context_overflow,
    is_tool_call_parse_error,
    json_or_none,
    retry_after_seconds,
    tool_call_raw_text,
)
from eog_core.run._apis import Conversation, ModelTurn, new_conversation
from eog_core.run._preflight import check_endpoint
from eog_core.run._settings import ModelSettings

__all__ = ["ModelClient", "ModelReply", "ModelSettings", "retry_after_seconds"]

log = logging.getLogger("eog_core.run.model")

_MAX_RETRY_AFTER = 600.0


@attrs.frozen(kw_only=True)
class ModelReply:
    """One answered request: the turn, when it was asked, how long it took, how many tries."""

    turn: ModelTurn
    started_at: float
    latency_ms: float
    attempts: int
    repaired: int = 0
    """Lone surrogates (half an emoji) in the answer, replaced by U+FFFD so it can be sent and
    written as UTF-8."""


@attrs.define
class _RateLimiter:
    """Spaces request starts ``1/rate`` seconds apart, across every rollout."""

    interval: float
    _next: float = 0.0

    async def wait(self) -> None:
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


@attrs.define
class ModelClient:
    """Asks one model; share one client across every rollout of a run (one connection pool)."""

    settings: ModelSettings
    _session: aiohttp.ClientSession | None = attrs.field(default=None, init=False, repr=False)
    _limiter: _RateLimiter | None = attrs.field(default=None, init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False)
    _failing_since: float | None = attrs.field(default=None, init=False, repr=False)
    """When the current stretch of transport-only failures began (monotonic); None when the
    endpoint last answered."""
    _last_answer: float = attrs.field(factory=time.monotonic, init=False, repr=False)
    """When any request or probe of this client last got an HTTP answer (monotonic; its
    creation to begin with)."""

    def __attrs_post_init__(self) -> None:
        if self.settings.max_requests_per_second:
            self._limiter = _RateLimiter(1.0 / self.settings.max_requests_per_second)

    def conversation(self, system: str, user: str, tools: list[dict[str, Any]]) -> Conversation:
        return new_conversation(self.settings.api, system, user, tools)

    async def ask(
        self,
        conversation: Conversation,
        *,
        turn: int = 0,
        overrides: Mapping[str, Any] | None = None,
    ) -> ModelReply:
        """Send the conversation, read the answer; retries as the module says."""
        settings = self.settings
        if overrides:
            settings = attrs.evolve(settings, **overrides)
        body = conversation.body(settings)
        started = time.time()
        clock = time.perf_counter()
        answer, attempts, repaired = await self._post(conversation.endpoint, body)
        try:
            parsed = conversation.read(answer, turn)
        except ValueError as exc:
            raise ModelUnreachableError(
                f"model answer could not be read: {exc}", status=200, attempts=attempts
            ) from exc
        return ModelReply(
            turn=parsed,
            started_at=started,
            repaired=repaired,
            latency_ms=(time.perf_counter() - clock) * 1000,
            attempts=attempts,
        )

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise ModelError("the model client is closed")
        if self._session is None:
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if self.settings.api_key:
                headers["Authorization"] = f"Bearer {self.settings.api_key}"
            timeout = self.settings.timeout
            self._session = aiohttp.ClientSession(
                headers=headers,
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=min(10.0, timeout)),
            )
        return self._session

    async def _exchange(
        self, method: str, url: str, payload: bytes | None = None, seconds: float | None = None
    ) -> Answer:
        session = self._open()
        limit = (
            session.timeout
            if seconds is None
            else aiohttp.ClientTimeout(total=seconds, sock_connect=min(10.0, seconds))
        )
        async with session.request(method, url, data=payload, timeout=limit) as response:
            text = await response.text(errors="replace")
            self._last_answer = time.monotonic()  # the server is working, whoever waits on it
            return Answer(response.status, text, response.headers)

    async def alive(self, seconds: float = 10.0) -> bool:
        """Does the endpoint answer ``GET {base_url}/models`` (with any HTTP status) in time?
        An answer also ends a stretch of transport failures: the endpoint is back."""
        try:
            answer = await self._exchange(
                "GET", self.settings.base_url + "/models", seconds=seconds
            )
        except (aiohttp.ClientError, TimeoutError):
            return False
        if not backend_missing(answer.status, json_or_none(answer.text)):
            self._answered()
        return True

    def _answered(self) -> None:
        self._failing_since = None
        self._last_answer = time.monotonic()

    def _heard_within(self, seconds: float) -> bool:
        """Did any request of this client get an answer in the last ``seconds``? A server
        whose every HTTP worker is busy generating (llama.cpp's fixed thread pool) queues
        the probe too, yet answers its requests one after another."""
        return time.monotonic() - self._last_answer < seconds

    def _probe_timeout(self) -> float:
        return min(self.settings.probe_timeout, self.settings.idle_timeout or float("inf"))

    async def _watched(self, url: str, payload: bytes) -> Answer:
        """POST, probing the endpoint each ``idle_timeout`` the answer is silent."""
        idle = self.settings.idle_timeout
        if idle is None:
            return await self._exchange("POST", url, payload)
        request = asyncio.ensure_future(self._exchange("POST", url, payload))
        probe: asyncio.Future[bool] | None = None
        try:
            while True:
                done, _ = await asyncio.wait({request}, timeout=idle)
                if done:
                    return request.result()
                probe = asyncio.ensure_future(self.alive(self._probe_timeout()))
                await asyncio.wait({request, probe}, return_when=asyncio.FIRST_COMPLETED)
                if request.done():  # answered while the probe was out
                    return request.result()
                if not probe.result() and not self._heard_within(idle):
                    raise Hung(
                        f"no answer for {idle:g}s, none to any other request either, "
                        "and GET /models unanswered"
                    )
        finally:
            for pending in (request, probe):
                if pending is not None and not pending.done():
                    pending.cancel()
                    await asyncio.gather(pending, return_exceptions=True)

    def _transport_failed(self, since: float) -> bool:
        """Note a transport failure; True when the endpoint has failed long enough to give up."""
        if self._failing_since is None:
            self._failing_since = since
        return time.monotonic() - self._failing_since >= self.settings.unreachable_after

    async def _post(
        self, endpoint: str, body: Mapping[str, Any]
    ) -> tuple[dict[str, Any], int, int]:
        """The answer (lone surrogates repaired), the attempts it took, how many were repaired."""
        settings = self.settings
        url = settings.base_url + endpoint
        payload, replaced = dumps_utf8(body)
        if replaced:
            log.warning("replaced %d lone surrogate(s) in a model request with U+FFFD", replaced)
        status: int | None = None
        reason = ""
        parse_failures = 0
        for attempt in range(1, settings.max_retries + 2):
            if self._limiter is not None:
                await self._limiter.wait()
            wait: float | None = None
            sent = time.monotonic()
            give_up = False
            try:
                if self._failing_since is not None and not await self.alive(self._probe_timeout()):
                    raise Hung("the endpoint did not answer GET /models (refused or silent)")
                answer = await self._watched(url, payload)
            except (aiohttp.ClientError, TimeoutError, Hung) as exc:
                status, reason = None, f"{type(exc).__name__}: {exc}".rstrip(": ")
                if isinstance(exc, Hung):
                    reason = f"hung: {exc}"
                # a hung request was silent since it was sent; a timeout or a refusal counts
                # from now, so one slow generation alone never reads as an outage
                give_up = self._transport_failed(
                    sent if isinstance(exc, Hung) else time.monotonic()
                )
            else:
                status = answer.status
                wait = retry_after_seconds(answer.headers)
                parsed = json_or_none(answer.text)
                if not backend_missing(status, parsed):
                    self._answered()
                if 200 <= status < 300:
                    if isinstance(parsed, dict) and not parsed.get("error"):
                        if not may_hold_lone_surrogates(answer.text):  # the usual: no walk
                            return parsed, attempt, 0
                        repaired, count = repair_tree(parsed)
                        return repaired, attempt, count
                    reason = f"HTTP {status} with an unreadable body: {answer.text[:200]!r}"
                    give_up = self._transport_failed(time.monotonic())
                else:
                    detail = error_detail(answer.text)
                    if is_context_overflow(status, detail):
                        raise ContextOverflowError(
                            f"context window exceeded: {detail}",
                            status=status,
                            detail=detail,
                            attempts=attempt,
                        )
                    if is_tool_call_parse_error(status, detail):
                        parse_failures += 1
                        if parse_failures > 1 or attempt > settings.max_retries:
                            raise ToolCallParseError(
                                f"the server could not parse the model's tool call (HTTP {status}): "
                                f"{detail}",
                                status=status,
                                detail=detail,
                                attempts=attempt,
                                raw_text=tool_call_raw_text(json_or_none(answer.text), detail),
                            )
                        wait = 0.0  # a sampled answer may parse on a second try; at once
                    elif status not in RETRY_STATUSES and status < 500:
                        raise ModelHTTPError(
                            f"model endpoint answered HTTP {status}: {detail}",
                            status=status,
                            detail=detail,
                            attempts=attempt,
                        )
                    reason = f"HTTP {status}: {detail}"
                    if backend_missing(status, parsed):  # a proxy whose model server is gone
                        give_up = self._transport_failed(time.monotonic())
            if give_up:
                down = time.monotonic() - (self._failing_since or sent)
                raise ModelUnreachableError(
                    f"model endpoint {redact_url(url)} unreachable for {down:.0f}s "
                    f"({attempt} attempt(s)); last: {reason}",
                    status=status,
                    attempts=attempt,
                )
            if attempt > settings.max_retries:
                break
            if wait is None:
                backoff = min(settings.backoff_max, settings.backoff_initial * 2 ** (attempt - 1))
                wait = backoff * random.uniform(0.5, 1.0)
            wait = min(wait, _MAX_RETRY_AFTER)
            if self._failing_since is not None:  # never sleep past the give-up point
                left = settings.unreachable_after - (time.monotonic() - self._failing_since)
                wait = max(0.0, min(wait, left))
            log.warning(
                "model request failed (%s); retry %d of %d in %.2fs",
                reason,
                attempt,
                settings.max_retries,
                wait,
            )
            await asyncio.sleep(wait)
        raise ModelUnreachableError(
            f"model endpoint {redact_url(url)} gave no usable answer after {settings.max_retries + 1} "
            f"attempts; last: {reason}",
            status=status,
            attempts=settings.max_retries + 1,
        )

    async def preflight(self) -> str:
        """Check the endpoint before a run seeds anything: it answers, takes the key, knows the
        model. Returns what was checked; raises :class:`ModelPreflightError` in one line
        (``eog_core.run._preflight``)."""
        return await check_endpoint(self.settings, self._exchange, self._watched)

    async def aclose(self) -> None:
        """Close the connection pool. Idempotent."""
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
