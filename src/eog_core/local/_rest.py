"""LocalGym's REST answers: reading a JSON object body, and the ``{"detail": ...}`` errors."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["detail_answer", "dumps", "json_object"]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def detail_answer(text: str, *, status: int) -> web.Response:
    return web.json_response({"detail": text}, status=status)


async def json_object(
    request: web.Request, *, allow_empty: bool = False
) -> dict[str, Any] | web.Response:
    raw = await request.read()
    if allow_empty and not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested too deeply to parse
        return detail_answer("Request body must be JSON", status=400)
    if not isinstance(body, dict):
        return detail_answer("Request body must be a JSON object", status=400)
    return body
