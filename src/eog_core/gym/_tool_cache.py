"""A server's tool list: read page by page, cached once per MCP session and shared by
every client of it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from eog_core.errors import GymProtocolError
from eog_core.tasks import ToolSpec

__all__ = ["ToolCache", "every_page"]

_MAX_TOOL_PAGES = 1000

Rpc = Callable[..., Awaitable[dict[str, Any]]]
"""``GymClient._rpc``: ``(method, params, headers, *, idempotent) -> result``."""


async def every_page(
    rpc: Rpc,
    protocol_error: Callable[[str], GymProtocolError],
) -> list[dict[str, Any]]:
    """Every tool of ``tools/list``, following ``nextCursor`` (a cursor seen twice, or
    more than 1000 pages, is a protocol error)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    no_headers: Mapping[str, str] = {}
    for _ in range(_MAX_TOOL_PAGES):
        params = {} if cursor is None else {"cursor": cursor}
        result = await rpc("tools/list", params, no_headers, idempotent=True)
        page = result.get("tools")
        if not isinstance(page, list):
            raise protocol_error("tools/list answered without a tools list")
        tools.extend(tool for tool in page if isinstance(tool, dict))
        cursor = result.get("nextCursor")
        if not cursor:
            return tools
        if not isinstance(cursor, str):
            raise protocol_error(f"tools/list answered a non-string cursor {cursor!r}")
        if cursor in seen:
            raise protocol_error(f"tools/list repeated cursor {cursor!r}")
        seen.add(cursor)
    raise protocol_error(f"tools/list gave more than {_MAX_TOOL_PAGES} pages")


@attrs.define(eq=False)
class ToolCache:
    """The last ``tools/list`` answer (all pages) and its :class:`ToolSpec` reading per gym
    name; :meth:`clear` when the session is re-initialized (a new server, maybe)."""

    tools: list[dict[str, Any]] | None = None
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, repr=False)
    _specs: dict[str | None, tuple[list[dict[str, Any]], tuple[ToolSpec, ...]]] = attrs.field(
        factory=dict, repr=False
    )
    """Per gym name: the list the specs were read from (kept alive: compared by identity)."""

    def clear(self) -> None:
        self.tools = None

    async def listing(
        self, fetch: Callable[[], Awaitable[list[dict[str, Any]]]], refresh: bool
    ) -> list[dict[str, Any]]:
        """The cached list, fetched once (concurrent callers wait for that one), or again
        on ``refresh``."""
        if not refresh and self.tools is not None:
            return self.tools
        async with self._lock:
            if refresh or self.tools is None:
                self.tools = await fetch()
            return self.tools

    def specs(self, source: list[dict[str, Any]], gym: str | None) -> tuple[ToolSpec, ...]:
        """``source`` (a list :meth:`listing` answered) read as ``gym``'s tool specs, once."""
        cached = self._specs.get(gym)
        if cached is None or cached[0] is not source:
            cached = self._specs[gym] = (
                source,
                tuple(ToolSpec.from_mcp(t, gym=gym) for t in source),
            )
        return cached[1]
