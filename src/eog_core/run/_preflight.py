"""The check of a model endpoint before a run seeds anything (:meth:`ModelClient.preflight`).

``GET /models`` first, within ``probe_timeout`` (a listed model name is enough); when the
list does not name the model (llama.cpp serves any name) or the route is missing, one
tiny request with the run's own output limit. Every failure is one line naming what
looks wrong: nothing listening, TLS spoken to a plain HTTP server, a refused key, a
base URL without its ``/v1``, a page that is not a model's answer, an unknown model.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import aiohttp
import attrs

from eog_core._json import dumps_utf8
from eog_core._redact import redact_url
from eog_core.errors import ModelPreflightError
from eog_core.run._answers import (
    RETRY_STATUSES,
    Answer,
    Hung,
    error_detail,
    json_or_none,
    model_ids,
)
from eog_core.run._apis import new_conversation

if TYPE_CHECKING:  # an argument type: _model calls this module
    from eog_core.run._settings import ModelSettings

__all__ = ["STARTING_GRACE", "check_endpoint"]

STARTING_GRACE = 5.0
"""Seconds the preflight waits for a refusing endpoint to start listening (a server started
in the background a moment before the run, as the README's offline try does)."""
LOADING_GRACE = 60.0
"""Seconds a 503 (a server still loading its model) is asked again."""

Exchange = Callable[[str, str, bytes | None, float | None], Awaitable[Answer]]
"""``(method, url, payload, seconds)`` -> the answer: one HTTP request of the client."""
Watched = Callable[[str, bytes], Awaitable[Answer]]
"""``(url, payload)`` -> the answer: a POST probed while it is silent."""


def _tls_failure(where: str, error: aiohttp.ClientConnectorError) -> str | None:
    """What a failed TLS handshake says about the server, or None if it was no TLS failure."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return f"its TLS certificate is not trusted ({error.certificate_error})"
    reset = isinstance(error.os_error, ConnectionResetError | ConnectionAbortedError)
    if not isinstance(error, aiohttp.ClientSSLError) and not reset:
        return None
    plain = where.replace("https://", "http://", 1)
    return (
        f"the TLS handshake failed ({error.os_error}): it looks like https:// spoken to a "
        f"plain HTTP server; try {plain}"
    )


async def _models(settings: ModelSettings, exchange: Exchange, seconds: float) -> Answer:
    """``GET /models``; a refused connection is tried again for :data:`STARTING_GRACE`."""
    where = redact_url(settings.base_url)
    starting_until = time.monotonic() + STARTING_GRACE
    while True:
        try:
            return await exchange("GET", settings.base_url + "/models", None, seconds)
        except aiohttp.ClientConnectorError as exc:
            secure = settings.base_url.startswith("https://")
            if secure and (tls := _tls_failure(where, exc)) is not None:
                raise ModelPreflightError(f"no model server answers at {where}: {tls}") from None
            if time.monotonic() >= starting_until:  # refused: maybe a server started just now
                raise ModelPreflightError(
                    f"no model server answers at {where}: nothing accepts connections there "
                    f"(waited {STARTING_GRACE:g}s)"
                ) from None
            await asyncio.sleep(0.25)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ModelPreflightError(
                f"no model server answers at {where}: "
                + (
                    f"GET /models got no answer in {seconds:g}s (--probe-timeout)"
                    if isinstance(exc, TimeoutError)
                    else f"{type(exc).__name__}: {exc}".rstrip(": ")
                )
            ) from None


async def _missing_v1(settings: ModelSettings, exchange: Exchange, seconds: float) -> str:
    """For a 404: a hint that the base URL lacks its ``/v1`` ('' when it has one)."""
    base = settings.base_url
    if urllib.parse.urlsplit(base).path.rstrip("/").endswith("/v1"):
        return ""
    try:
        listed = (await exchange("GET", base + "/v1/models", None, seconds)).status == 200
    except (aiohttp.ClientError, TimeoutError):
        listed = False
    if listed:
        return f"; {redact_url(base)}/v1/models answers: try --base-url {redact_url(base)}/v1"
    return "; is --base-url the API's base (usually ending in /v1)?"


async def check_endpoint(settings: ModelSettings, exchange: Exchange, watched: Watched) -> str:
    """Check the endpoint: it answers, takes the key, knows the model. Returns what was
    checked; raises :class:`ModelPreflightError` in one line."""
    where = redact_url(settings.base_url)
    seconds = min(settings.probe_timeout, settings.timeout)  # a live server lists at once
    answer = await _models(settings, exchange, seconds)
    if answer.status in (401, 403):
        raise ModelPreflightError(
            f"{where} refused the API key (HTTP {answer.status}: {error_detail(answer.text)})",
            status=answer.status,
        )
    listed = model_ids(answer.text) if answer.status == 200 else None
    if listed is not None and settings.model in listed:
        return f"{where}: model {settings.model!r} listed by GET /models"
    conversation = new_conversation(settings.api, "", "Say OK.", [])
    # the real output limit: a limit over the model's window is refused here (vLLM)
    payload, _ = dumps_utf8(conversation.body(attrs.evolve(settings, token_ids=False)))
    loading_until = time.monotonic() + LOADING_GRACE
    while True:
        try:
            answer = await watched(settings.base_url + conversation.endpoint, payload)
        except (aiohttp.ClientError, TimeoutError, Hung) as exc:
            raise ModelPreflightError(
                f"{where} did not answer a one-line request: {type(exc).__name__}: {exc}".rstrip(
                    ": "
                )
            ) from None
        if answer.status != 503 or time.monotonic() > loading_until:
            break
        await asyncio.sleep(2.0)  # llama.cpp and vLLM answer 503 while loading the model
    parsed = json_or_none(answer.text)
    if 200 <= answer.status < 300:
        try:
            conversation.read(parsed if isinstance(parsed, dict) else {}, 0)
        except ValueError as exc:
            raise ModelPreflightError(
                f"{where} answered HTTP {answer.status} with no model answer ({exc}): is "
                f"--base-url the API's base (ending in /v1)? {answer.text[:120]!r}"
            ) from None
        return f"{where}: a one-line request for model {settings.model!r} was answered"
    if answer.status in RETRY_STATUSES:
        return f"{where}: a one-line request answered HTTP {answer.status} (busy, not refused)"
    known = f"; the server lists {', '.join(sorted(listed)[:5])}" if listed else ""
    if answer.status == 404 and not listed:
        known = await _missing_v1(settings, exchange, seconds)
    raise ModelPreflightError(
        f"{where} refused a one-line request for model {settings.model!r} (HTTP "
        f"{answer.status}: {error_detail(answer.text)}){known}",
        status=answer.status,
    )
