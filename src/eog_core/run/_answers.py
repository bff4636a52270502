"""How a model endpoint's HTTP answers read: what the client and its preflight both need.

An :class:`Answer` is one HTTP answer as text; :func:`error_detail` is the server's own words
in one line; :func:`backend_missing` tells a proxy whose model server is gone from a
model that answered; :class:`Hung` is a request that heard nothing and whose endpoint
did not answer a probe either.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "RETRY_STATUSES",
    "Answer",
    "Hung",
    "backend_missing",
    "error_detail",
    "json_or_none",
    "model_ids",
    "retry_after_seconds",
]

RETRY_STATUSES = frozenset({408, 409, 429})
"""Answers below 500 that a retry may change (besides every 5xx)."""


class Hung(Exception):
    """A request received nothing for ``idle_timeout`` and the endpoint did not answer a probe."""


@attrs.frozen
class Answer:
    status: int
    text: str
    headers: Mapping[str, str]


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_detail(text: str) -> str:
    """The server's message in an error body (OpenAI's ``error.code/type/message``), or its start."""
    body = json_or_none(text)
    if body is None:
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


def backend_missing(status: int, parsed: Any) -> bool:
    """A proxy's 502/504, or an answer that is not a model's JSON at all (an HTML page): the
    model server behind the URL is not there, which retrying for minutes will not change."""
    return status in (502, 504) or (200 <= status < 300 and not isinstance(parsed, dict))


def model_ids(text: str) -> set[str] | None:
    """The model names of a ``GET /models`` answer (OpenAI's ``data[].id``), None if unreadable."""
    body = json_or_none(text)
    data = body.get("data", body.get("models")) if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    names: set[str] = set()
    for entry in data:
        if isinstance(entry, Mapping):
            names.update(
                str(entry[k]) for k in ("id", "name", "model") if isinstance(entry.get(k), str)
            )
    return names


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
