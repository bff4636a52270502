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

from eog_core.verify._outcome import SqlOutcome

__all__ = ["sql_answer", "sql_error_text"]

_DECODER = json.JSONDecoder()


def _loads(raw: bytes) -> Any:
    """``json.loads(raw)``, skipping its encoding sniffing when it can only find UTF-8.

    ``json.detect_encoding`` says UTF-8 whenever the first byte is ASCII but not
    NUL (no byte-order mark starts so) and the second byte is not NUL; then
    ``json.loads`` is exactly this decode and its default decoder.
    """
    if len(raw) >= 4 and 0 < raw[0] < 0x80 and raw[1]:
        return _DECODER.decode(raw.decode("utf-8", "surrogatepass"))
    return json.loads(raw)


def sql_answer(raw: bytes) -> SqlOutcome:
    """The outcome of a 2xx answer body."""
    try:
        body = _loads(raw)
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
