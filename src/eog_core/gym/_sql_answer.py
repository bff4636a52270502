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
from typing import Any

from eog_core._json import loads_bytes
from eog_core.verify._outcome import SqlOutcome

__all__ = ["sql_answer", "sql_error_text"]

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
