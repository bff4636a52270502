"""The gym client's small records: timeouts, tool results, database ids."""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Timeouts", "ToolResult", "new_database_id", "random_chars", "seed_timeout"]

_ID_ALPHABET = string.ascii_lowercase + string.digits
_new = object.__new__


@attrs.frozen(kw_only=True)
class Timeouts:
    """Seconds allowed per kind of request; ``seed=None`` scales with the dump size."""

    connect: float = 10.0
    rpc: float = 300.0
    sql: float = 60.0
    seed: float | None = None
    admin: float = 30.0


DEFAULT_TIMEOUTS = Timeouts()
"""The limits used when none are given (frozen: one instance serves every client)."""


@attrs.define(kw_only=True)
class ToolResult:
    """A ``tools/call`` result; ``is_error`` results are returned, not raised.
    Read-only by convention (one is made per call; a frozen class costs twice as much)."""

    content: tuple[Mapping[str, Any], ...]
    text: str
    structured: Any = None
    is_error: bool = False
    raw: Mapping[str, Any] = attrs.field(repr=False)

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> ToolResult:
        """Read the ``result`` object of a ``tools/call`` answer."""
        items: Any = result.get("content") or ()
        first = items[0] if type(items) is list and len(items) == 1 else None
        if type(first) is dict and first.get("type") == "text":  # the usual: one text
            content: tuple[Mapping[str, Any], ...] = (first,)
            text = str(first.get("text", ""))
        else:
            content = tuple(item for item in items if isinstance(item, dict))
            texts = [str(item.get("text", "")) for item in content if item.get("type") == "text"]
            text = texts[0] if len(texts) == 1 else "\n".join(texts)
        structured, is_error = result.get("structuredContent"), bool(result.get("isError", False))
        if cls is not ToolResult:  # a subclass may add fields: its own __init__
            return cls(
                content=content, text=text, structured=structured, is_error=is_error, raw=result
            )
        # Our own type, every field known: the stores without the keyword call (callgrind:
        # 5,000 instructions less per tool call; tests/gym/test_fast_records.py pins it).
        tool_result = _new(ToolResult)
        tool_result.content = content
        tool_result.text = text
        tool_result.structured = structured
        tool_result.is_error = is_error
        tool_result.raw = result
        return tool_result


def new_database_id() -> str:
    """A fresh id in upstream's form: ``db_<epoch ms>_<9 chars [a-z0-9]>``, the characters
    from the OS's randomness (``benchmarks/bench_database_id.py``: a 4 KiB buffer would
    save about 1 us per id, 0.1 % of a task's client CPU, so there is none)."""
    return f"db_{int(time.time() * 1000)}_{random_chars(9)}"


def random_chars(count: int) -> str:
    """``count`` characters of ``[a-z0-9]``, uniform (bytes >= 252 are skipped)."""
    chars: list[str] = []
    while len(chars) < count:  # 2 * count bytes hold count usable ones but once in ~10^13
        chars += [_ID_ALPHABET[b % 36] for b in secrets.token_bytes(2 * count) if b < 252]
    return "".join(chars[:count])


def seed_timeout(sql: str) -> float:
    """Upstream's seeding budget: ``max(1200, 120 + bytes / 102400)`` seconds."""
    size = len(sql) if sql.isascii() else len(sql.encode())
    return max(1200.0, 120.0 + size / 102400)
