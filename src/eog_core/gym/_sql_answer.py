"""What a gym's ``/api/sql-runner`` answer means, read as upstream reads it.

Upstream decodes a 2xx body as JSON and nothing else: an empty, blank or
non-JSON body is a failed query whose error is the decoder's message. An error
status becomes ``SQL API call failed (HTTP <status>): <detail>`` where detail
is the JSON body's ``detail`` (else ``message``, else the whole text) rendered
with Python's ``str()``, so ``{"detail": null}`` reads ``None`` and a dict
detail reads ``{'msg': '', 'code': 1}``; nothing is stripped.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from eog_core._json import loads_bytes
from eog_core.errors import GymError, GymHTTPError
from eog_core.verify import SqlOutcome

__all__ = ["sql_answer", "sql_error_text", "sql_failure"]

# SQL runner statuses that are no verdict on the query: a busy or unavailable gym
# (or its gateway), or a database / endpoint that is not there (404).
_UNAVAILABLE = frozenset({404, 408, 429, 502, 503, 504})
_REFUSED = frozenset({401, 403})  # our credentials: a configuration failure


def sql_answer(raw: bytes) -> SqlOutcome:
    """The outcome of a 2xx answer body."""
    try:
        body = loads_bytes(raw)
    except (ValueError, RecursionError) as exc:
        return SqlOutcome.failed(str(exc), kind="answer")
    return SqlOutcome.ok(body)


def sql_error_text(status: int, raw: bytes) -> str:
    """Upstream's error text for an answer with a non-success status."""
    text = raw.decode("utf-8", errors="replace")
    detail: Any = text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        detail = data.get("detail", data.get("message", text))
    return f"SQL API call failed (HTTP {status}): {detail}"


def sql_failure(error: GymError) -> SqlOutcome:
    """The outcome of a query the gym did not answer with success: an HTTP status the
    gym's (``database``), ours (``config``) or no verdict (``transport``)."""
    if not isinstance(error, GymHTTPError):
        return SqlOutcome.failed(str(error), kind="transport")
    kind: Literal["transport", "config", "database"] = (
        "transport"
        if error.status in _UNAVAILABLE
        else "config"
        if error.status in _REFUSED
        else "database"
    )
    return SqlOutcome.failed(
        sql_error_text(error.status, error.raw), kind=kind, status=error.status
    )
