"""Reading JSON that someone else wrote (a model's tool arguments): one error type for all.

``json.loads`` alone lets ``UnicodeDecodeError`` (bytes that are not UTF-8),
``RecursionError`` (deep nesting) and ``ValueError`` (integers over Python's
4,300-digit conversion limit) escape; here each becomes :class:`JsonInputError`,
and nesting is capped well below the interpreter's recursion limit so that
what was accepted can be serialised again.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "JsonInputError", "loads_untrusted"]

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted."""


class JsonInputError(ValueError):
    """The text is not JSON we accept; the message says why (never quoting the text)."""


def loads_untrusted(data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``data`` as JSON; any failure raises :class:`JsonInputError`."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not UTF-8: invalid byte at offset {exc.start}") from None
    else:
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise JsonInputError(
                f"not UTF-8: unpaired surrogate at character {exc.start}"
            ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"{exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise JsonInputError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # e.g. an integer over the int conversion limit
        raise JsonInputError(str(exc)) from None
    if _depth_exceeds(value, max_depth):
        raise JsonInputError(f"nested deeper than {max_depth} levels")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` nests lists/dicts more than ``limit`` deep (iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
