"""An OpenAI-compatible model endpoint over one pooled aiohttp session.

Retries 408/409/429/5xx answers, timeouts and connection failures with
exponential backoff and jitter, honouring ``Retry-After`` (seconds or an HTTP
date) and ``retry-after-ms``; a request that no longer fits the context window
raises :class:`ContextOverflowError` at once; other 4xx raise
:class:`ModelHTTPError`. The API key goes into the ``Authorization`` header
and nowhere else: it is not in any repr, log line or error message.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs

from eog_core._redact import redact_url
from eog_core.errors import (
    ContextOverflowError,
    JudgeError,
    ModelError,
    ModelHTTPError,
    ModelUnreachableError,
    UsageError,
)
from eog_core.run._apis import (
    ApiName,
    Conversation,
    ModelTurn,
    is_context_overflow,
    new_conversation,
)
from eog_core.verify import JudgeRequest

__all__ = ["ModelClient", "ModelJudge", "ModelReply", "ModelSettings", "retry_after_seconds"]

log = logging.getLogger("eog_core.run.model")

_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_AFTER = 600.0


def _positive(_: Any, attribute: attrs.Attribute[Any], value: float | int | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{attribute.name} must be positive, got {value}")


def _strip_slash(url: str) -> str:
    return str(url).rstrip("/")


def _base_url(_: Any, __: Any, value: str) -> None:
    if not value.startswith(("http://", "https://")):
        raise UsageError(f"base_url must be an http(s) URL, got {value!r}")


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Where the model is and how to ask it.

    ``base_url`` is the OpenAI-style base (``https://api.openai.com/v1``); the API's
    path (``/chat/completions`` or ``/responses``) is appended. ``extra_body`` is
    merged into every request last: it wins, and a null value removes a field
    (``{"temperature": null}`` for models that refuse one). Defaults follow
    upstream's LLM config: temperature 0.0, 4096 output tokens.
    """

    model: str
    base_url: str = attrs.field(validator=_base_url, converter=_strip_slash)
    api: ApiName = "chat"
    api_key: str | None = attrs.field(default=None, repr=False)
    temperature: float | None = 0.0
    max_output_tokens: int | None = attrs.field(default=4096, validator=_positive)
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    timeout: float = attrs.field(default=600.0, validator=_positive)
    max_retries: int = 8
    backoff_initial: float = attrs.field(default=1.0, validator=_positive)
    backoff_max: float = attrs.field(default=60.0, validator=_positive)
    max_requests_per_second: float | None = attrs.field(default=None, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.api not in ("chat", "responses"):
            raise UsageError(f"api must be 'chat' or 'responses', got {self.api!r}")
        if self.max_retries < 0:
            raise UsageError(f"max_retries must be at least 0, got {self.max_retries}")

    def describe(self) -> dict[str, Any]:
        """The settings as recorded in outputs: everything except the key."""
        return {"model": self.model, "base_url": self.base_url, "api": self.api,
                "temperature": self.temperature, "max_output_tokens": self.max_output_tokens,
                "extra_body": dict(self.extra_body)}


@attrs.frozen(kw_only=True)
class ModelReply:
    """One answered request: the turn, when it was asked, how long it took, how many tries."""

    turn: ModelTurn
    started_at: float
    latency_ms: float
    attempts: int


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a 429/503 answer asks for: ``retry-after-ms``, then ``Retry-After`` (seconds or date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if (millis := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _detail(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        parts = [str(error.get(k)) for k in ("code", "type", "message") if error.get(k)]
        return ": ".join(parts)[:500]
    if isinstance(error, str):
        return error[:500]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:500]
    return text[:500]


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

    def __attrs_post_init__(self) -> None:
        if self.settings.max_requests_per_second:
            self._limiter = _RateLimiter(1.0 / self.settings.max_requests_per_second)

    def conversation(self, system: str, user: str, tools: list[dict[str, Any]]) -> Conversation:
        return new_conversation(self.settings.api, system, user, tools)

    async def ask(self, conversation: Conversation, *, turn: int = 0,
                  overrides: Mapping[str, Any] | None = None) -> ModelReply:
        """Send the conversation, read the answer; retries as the module says."""
        settings = self.settings
        if overrides:
            settings = attrs.evolve(settings, **overrides)
        body = conversation.body(settings)
        started = time.time()
        clock = time.perf_counter()
        answer, attempts = await self._post(conversation.endpoint, body)
        try:
            parsed = conversation.read(answer, turn)
        except ValueError as exc:
            raise ModelUnreachableError(f"model answer could not be read: {exc}",
                                        status=200, attempts=attempts) from exc
        return ModelReply(turn=parsed, started_at=started,
                          latency_ms=(time.perf_counter() - clock) * 1000, attempts=attempts)

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise ModelError("the model client is closed")
        if self._session is None:
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if self.settings.api_key:
                headers["Authorization"] = f"Bearer {self.settings.api_key}"
            self._session = aiohttp.ClientSession(
                headers=headers, connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout))
        return self._session

    async def _post(self, endpoint: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        session = self._open()
        settings = self.settings
        url = settings.base_url + endpoint
        payload = json.dumps(body, ensure_ascii=False).encode()
        status: int | None = None
        reason = ""
        for attempt in range(1, settings.max_retries + 2):
            if self._limiter is not None:
                await self._limiter.wait()
            wait: float | None = None
            try:
                async with session.post(url, data=payload) as response:
                    status = response.status
                    text = await response.text(errors="replace")
                    wait = retry_after_seconds(response.headers)
            except (aiohttp.ClientError, TimeoutError) as exc:
                status, reason = None, f"{type(exc).__name__}: {exc}".rstrip(": ")
            else:
                if 200 <= status < 300:
                    try:
                        answer = json.loads(text)
                    except ValueError:
                        answer = None
                    if isinstance(answer, dict) and not answer.get("error"):
                        return answer, attempt
                    reason = f"HTTP {status} with an unreadable body: {text[:200]!r}"
                else:
                    detail = _detail(text)
                    if is_context_overflow(status, detail):
                        raise ContextOverflowError(f"context window exceeded: {detail}",
                                                   status=status, detail=detail, attempts=attempt)
                    if status not in _RETRY_STATUSES and status < 500:
                        raise ModelHTTPError(f"model endpoint answered HTTP {status}: {detail}",
                                             status=status, detail=detail, attempts=attempt)
                    reason = f"HTTP {status}: {detail}"
            if attempt > settings.max_retries:
                break
            if wait is None:
                backoff = min(settings.backoff_max, settings.backoff_initial * 2 ** (attempt - 1))
                wait = backoff * random.uniform(0.5, 1.0)
            wait = min(wait, _MAX_RETRY_AFTER)
            log.warning("model request failed (%s); retry %d of %d in %.2fs",
                        reason, attempt, settings.max_retries, wait)
            await asyncio.sleep(wait)
        raise ModelUnreachableError(
            f"model endpoint {redact_url(url)} gave no usable answer after {settings.max_retries + 1} "
            f"attempts; last: {reason}", status=status, attempts=settings.max_retries + 1)

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


@attrs.frozen
class ModelJudge:
    """The ``response_check`` judge on a model endpoint, at the request's temperature (0.0)."""

    client: ModelClient
    model: str | None = None

    async def __call__(self, request: JudgeRequest) -> str:
        conversation = self.client.conversation(request.system_prompt, request.user_prompt, [])
        overrides: dict[str, Any] = {"temperature": request.temperature}
        if self.model:
            overrides["model"] = self.model
        try:
            reply = await self.client.ask(conversation, overrides=overrides)
        except ModelError as exc:
            raise JudgeError(f"judge model failed: {exc}") from exc
        return reply.turn.text
