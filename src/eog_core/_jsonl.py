"""Reading JSON Lines (``rollouts.jsonl``, verdict files, task-id rows): one line reader for
``score``, ``compare`` and ``report``.

A line ends at ``b"\\n"`` only. A JSON string may hold U+2028, U+2029 or U+0085 raw
(orjson and Go write them so), which ``str.splitlines()`` would split at; a ``\\r``
before the newline is JSON whitespace. A record nested too deeply for the standard
library's recursive decoder is still read: every array or object deeper than
:data:`MAX_RECORD_DEPTH` levels is replaced by the string :data:`CUT_NOTE` (a deep value
shown cut), never a ``RecursionError``. :func:`cut_deep` does the same to a value
already read, for encoders that recurse.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from eog_core._json import nesting_depth

__all__ = [
    "CUT_NOTE",
    "MAX_RECORD_DEPTH",
    "JsonLineError",
    "cut_deep",
    "jsonl_values",
    "loads_line",
]

MAX_RECORD_DEPTH = 200
"""Deepest nesting of a record kept as it is (records of a run nest fewer than 10 levels)."""

CUT_NOTE = f"[cut: nested deeper than {MAX_RECORD_DEPTH} levels; the whole value is in the file]"

_STRUCTURE = re.compile(r'["\[\]{}]')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


class JsonLineError(ValueError):
    """A line that is not JSON; ``reason`` says why (never quoting the line), ``line`` where."""

    def __init__(self, reason: str, *, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(reason)


def _cut_text(text: str, limit: int) -> str:
    """``text`` with every array or object opened deeper than ``limit`` replaced by the JSON
    string :data:`CUT_NOTE` (strings skipped whole; a malformed text stays malformed)."""
    note = json.dumps(CUT_NOTE)
    parts: list[str] = []
    depth = kept_from = position = 0
    while (match := _STRUCTURE.search(text, position)) is not None:
        char, at = match.group(), match.start()
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:
                break  # unterminated: the decoder says so
            position = string.end()
            continue
        position = at + 1
        if char in "[{":
            depth += 1
            if depth == limit + 1:
                parts.append(text[kept_from:at])
        else:
            if depth == limit + 1:
                parts.append(note)
                kept_from = position
            depth -= 1
    parts.append(text[kept_from:])
    return "".join(parts)


def _stdlib_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonLineError(f"invalid JSON at column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        pass
    except ValueError:  # an integer literal over sys.get_int_max_str_digits()
        raise JsonLineError(
            f"an integer literal has more than {sys.get_int_max_str_digits()} digits"
        ) from None
    try:
        return json.loads(_cut_text(text, MAX_RECORD_DEPTH))
    except (ValueError, RecursionError):
        raise JsonLineError(f"invalid JSON nested deeper than {MAX_RECORD_DEPTH} levels") from None


def loads_line(line: bytes | str, fast: Callable[[bytes], Any] | None = None) -> Any:
    """One JSON Lines record; any failure raises :class:`JsonLineError`.

    ``fast`` (orjson's ``loads``) is tried first; whatever it refuses (lone surrogate
    escapes, ``NaN``, nesting past its limit) the standard library reads, and a record
    too deep for that is read with its deep values cut (:data:`CUT_NOTE`).
    """
    if fast is not None and isinstance(line, bytes):
        try:
            return fast(line)
        except ValueError:  # orjson.JSONDecodeError is a json.JSONDecodeError
            pass
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLineError(
                f"not UTF-8: invalid byte 0x{line[exc.start]:02x} at byte {exc.start + 1}"
            ) from None
    else:
        text = line
    return _stdlib_loads(text)


def jsonl_values(
    raw: bytes, fast: Callable[[bytes], Any] | None = None
) -> Iterator[tuple[int, bytes, Any]]:
    """``(line number, line, value)`` for each non-blank line of ``raw``, split at ``b"\\n"`` only.

    A line that cannot be read raises :class:`JsonLineError` with its 1-based ``line``.
    """
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = loads_line(line, fast)
        except JsonLineError as exc:
            exc.line = number
            raise
        yield number, line, value


def cut_deep(value: Any, *, limit: int = MAX_RECORD_DEPTH) -> Any:
    """``value`` with every list, tuple or dict nested deeper than ``limit`` replaced by
    :data:`CUT_NOTE`; the same object back when none is (safe for a recursive encoder)."""
    if nesting_depth(value, limit=limit) <= limit:
        return value

    def copy(item: Any, depth: int) -> Any:
        if isinstance(item, dict | list | tuple):
            if depth >= limit:
                return CUT_NOTE
            if isinstance(item, dict):
                return {key: copy(child, depth + 1) for key, child in item.items()}
            return [copy(child, depth + 1) for child in item]
        return item

    return copy(value, 0)
