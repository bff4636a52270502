"""Turning a SQL runner answer into the ``actual`` value a verifier compares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eog_core.verify._outcome import SqlOutcome

if TYPE_CHECKING:
    from eog_core.verify._policy import Policy

__all__ = ["extract_value"]


def _first_text(content: list[Any], default: Any) -> Any:
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text":
            return item.get("text", default)
    return _NO_TEXT


_NO_TEXT = object()


def _collapse_rows(rows: Any, *, list_rows: bool) -> Any:
    """One row with one column -> the value; one row -> the row; several -> all."""
    if type(rows) is list and len(rows) == 1 and type(rows[0]) is dict and len(rows[0]) == 1:
        for value in rows[0].values():  # the common answer: one value
            return value
    if not isinstance(rows, list) or not rows:
        return rows
    if len(rows) == 1:
        row = rows[0]
        if isinstance(row, dict) and len(row) == 1:
            return next(iter(row.values()))
        if list_rows and isinstance(row, list) and len(row) == 1:
            return row[0]
        return row
    return rows


def extract_value(
    outcome: SqlOutcome | Mapping[str, Any] | None, policy: Policy | None = None
) -> Any:
    """The value a verifier compares, taken from a SQL outcome exactly as upstream does.

    ``outcome`` is a :class:`SqlOutcome` or upstream's ``{"success", "result"}`` /
    ``{"success": false, "error"}`` mapping. Both policies extract alike; the
    argument is accepted so a future policy may differ.
    """
    if isinstance(outcome, SqlOutcome):  # as its to_upstream() reads, without building it
        return _from_body(outcome.body) if outcome.success else None
    if not outcome:
        return None
    body = outcome.get("result", {})
    if not outcome.get("success"):
        if isinstance(body, dict) and "content" in body:
            content = body["content"]
            if isinstance(content, list) and content:
                text = _first_text(content, "Error")
                if text is not _NO_TEXT:
                    return text
        return None
    return _from_body(body)


def _from_body(body: Any) -> Any:
    """The value of a successful answer's body."""
    if not isinstance(body, dict):
        return body
    if "data" in body:
        return _collapse_rows(body["data"], list_rows=False)
    if "rows" in body:
        return _collapse_rows(body["rows"], list_rows=True)
    if "content" in body:
        content = body["content"]
        if isinstance(content, list) and content:
            text = _first_text(content, body)
            if text is not _NO_TEXT:
                return text
        return content
    if "result" in body:
        return body["result"]
    return body
