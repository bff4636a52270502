"""LocalGym's REST answers: reading a JSON object body, and the ``{"detail": ...}`` errors."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from eog_core._json import JsonInputError, dumps_line, loads_untrusted

__all__ = ["detail_answer", "dumps", "json_object"]

dumps = dumps_line
"""A REST answer's JSON text: it always encodes (a lone surrogate in a query's rows is escaped)."""


def detail_answer(text: str, *, status: int) -> web.Response:
    return web.json_response({"detail": text}, status=status)


async def json_object(
    request: web.Request, *, allow_empty: bool = False
) -> dict[str, Any] | web.Response:
    raw = await request.read()
    if allow_empty and not raw.strip():
        return {}
    try:
        body = loads_untrusted(raw)
    except JsonInputError:  # not UTF-8, nested too deeply, a lone surrogate escape...
        return detail_answer("Request body must be JSON", status=400)
    if not isinstance(body, dict):
        return detail_answer("Request body must be a JSON object", status=400)
    return body
