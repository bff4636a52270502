"""Reading JSON that someone else wrote (task files, dataset rows, a model's tool arguments,
an MCP request body, a gym's answer).

``json.loads`` alone lets ``UnicodeDecodeError`` (bytes that are not UTF-8),
``RecursionError`` (deep nesting) and a bare ``ValueError`` (integers over
Python's 4,300-digit conversion limit) escape. Here each becomes one
:class:`JsonInputError` whose message says where (byte offset for bytes, line
and column for text) without quoting the text, and nesting is capped well below
the interpreter's recursion limit so that what was accepted can be compared,
printed and serialised again. :func:`loads_untrusted` raises
:class:`JsonInputError` (tool arguments answer it locally);
:func:`decode_json` raises :class:`SchemaError` naming the file (task loading).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from eog_core.errors import SchemaError

__all__ = [
    "MAX_DEPTH",
    "JsonInputError",
    "check_depth",
    "decode_json",
    "loads_bytes",
    "loads_untrusted",
    "may_hold_lone_surrogates",
    "nesting_depth",
    "repair_text",
    "repair_tree",
    "unsendable",
]

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted (real task files nest fewer than 10 levels)."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder()


_SCAN: Callable[[str, int], tuple[Any, int]] | None = getattr(_DECODER, "scan_once", None)
"""The default decoder's own scanner (set in CPython's ``JSONDecoder.__init__``, not a public
name): when absent, :func:`loads_bytes` is ``json.loads`` (tests/test_loads_bytes.py runs both)."""
_JSON_SPACE = " \t\n\r"
_OPENERS = frozenset(b"{[")
_SEQUENCES = (list, tuple)
_NESTING = (dict, list, tuple)
_BINARY = (bytes, bytearray)


def loads_bytes(raw: bytes) -> Any:
    """``json.loads(raw)`` (a gym's answer), without its encoding sniffing and decoder
    layers when the body is an object or array.

    ``json.detect_encoding`` says UTF-8 whenever the first byte is ASCII but not
    NUL (no byte-order mark starts so) and the second byte is not NUL; then
    ``json.loads`` is this decode and its default decoder, whose ``decode`` skips JSON
    whitespace around one value read by its scanner. A body that starts with ``{`` or
    ``[`` has none before it, so the scanner is called directly (callgrind: 6,700
    instructions less per answer, a third of decoding a tool's answer). Anything else,
    and every failure, goes to ``json.loads``: the same value or the same error.
    """
    scan = _SCAN
    if scan is not None and len(raw) >= 4 and raw[0] in _OPENERS and raw[1]:
        text = raw.decode("utf-8", "surrogatepass")
        try:
            value, end = scan(text, 0)
        except StopIteration:
            end = -1
        if end == len(text) or (end > 0 and not text[end:].strip(_JSON_SPACE)):
            return value
    return json.loads(raw)


def repair_text(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate (half an emoji) replaced by U+FFFD, and how many."""
    if not _LONE_SURROGATE.search(text):
        return text, 0
    return _LONE_SURROGATE.subn("\ufffd", text)


def may_hold_lone_surrogates(text: str) -> bool:
    """Could ``json.loads(text)`` hold a lone surrogate? Only through a ``\\ud800``-style escape
    (a cheap scan of the text, before any walk of the parsed value)."""
    return _SURROGATE_ESCAPE.search(text) is not None


def repair_tree(value: Any) -> tuple[Any, int]:
    """``value`` (parsed JSON) with lone surrogates in its strings and keys replaced by U+FFFD,
    and how many; the same object back when there were none."""
    count = 0

    def fix(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str):
            text, replaced = repair_text(item)
            count += replaced
            return text
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        if isinstance(item, list):
            return [fix(v) for v in item]
        return item

    if not _has_lone_surrogate(value):
        return value, 0
    return fix(value), count


class JsonInputError(ValueError):
    """The text is not JSON we accept; the message says why (never quoting the text).

    ``offset`` is the byte offset of the problem when the input was bytes (plus
    the ``start`` the caller gave), else None.
    """

    def __init__(self, message: str, *, offset: int | None = None) -> None:
        self.reason = message
        self.offset = offset
        super().__init__(message)


def nesting_depth(value: Any, *, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests lists, tuples and dicts (a scalar is 0); stops past ``limit``.

    Iterative, so it is safe on structures too deep for recursion.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        kind = type(item)
        if kind is dict or (kind is not list and isinstance(item, dict)):
            children: Any = item.values()
        elif kind is list or isinstance(item, _SEQUENCES):
            children = item
        else:
            continue
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        for child in children:  # (a loop, not a generator: a third of the cost)
            if isinstance(child, _NESTING):
                push((child, depth + 1))
    return deepest


def check_depth(
    value: Any, *, source: str | None = None, path: str = "$", max_depth: int = MAX_DEPTH
) -> None:
    """Raise :class:`SchemaError` if ``value`` nests deeper than ``max_depth``."""
    if nesting_depth(value, limit=max_depth) > max_depth:
        raise SchemaError(f"JSON nested deeper than {max_depth} levels", path=path, source=source)


def _byte_offset(text: str, position: int, start: int) -> int:
    return start + len(text[:position].encode("utf-8", "surrogatepass"))


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


@functools.cache
def _power_of_ten(exponent: int) -> int:
    power: int = 10**exponent
    return power


def _plain_and_flat(value: dict[Any, Any]) -> bool:
    """One level of ASCII text keys, with ASCII text, 64-bit integer, float, bool or None
    values: none of what :func:`unsendable` looks for can be in it."""
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return False
        elif kind is int:
            if item.bit_length() > 64:
                return False
        elif kind is float:
            if item - item != 0.0:  # NaN or an infinity (inf - inf is NaN)
                return False
        elif kind is not bool and item is not None:
            return False
    return True


def unsendable(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """Why an already-parsed value could not have come from :func:`loads_untrusted`, or None.

    The hostile content a JSON text can carry, looked for in a mapping built in
    code: nesting past ``max_depth``, strings (keys too) with an unpaired
    surrogate, integers past Python's int/str digit limit, NaN and infinities (which
    ``json.loads`` reads from ``NaN``/``Infinity`` but no JSON text may send). Iterative, so safe on
    structures too deep for recursion. Other non-JSON values (a ``datetime``) are
    not looked at: encoding reports those.
    """
    if type(value) is dict and max_depth >= 1 and _plain_and_flat(value):
        return None  # the usual tool arguments: nothing to look for, no walk
    limit = sys.get_int_max_str_digits()
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return (
                        "not UTF-8: a string holds an unpaired surrogate, "
                        "which no UTF-8 text can carry"
                    )
        elif isinstance(item, float):
            if not math.isfinite(item):  # json.loads reads NaN and Infinity; no JSON carries them
                return f"{item!r} is not a JSON number"
        elif isinstance(item, int):
            if limit and item.bit_length() > 3 * limit and abs(item) >= _power_of_ten(limit):
                return f"an integer has more than {limit} digits"
        elif isinstance(item, dict | list | tuple):
            if depth + 1 > max_depth:
                return f"JSON nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def loads_untrusted(
    data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH, start: int = 0
) -> Any:
    """Parse ``data`` as JSON; any failure raises :class:`JsonInputError`.

    ``start`` is the byte offset of ``data`` within its file, so offsets in
    messages point into the file (a ``.jsonl`` line, say).
    """
    measure_bytes = isinstance(data, _BINARY)
    if isinstance(data, _BINARY):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            where = start + exc.start
            raise JsonInputError(
                f"not UTF-8: invalid byte 0x{data[exc.start]:02x} at byte offset {where}",
                offset=where,
            ) from None
    else:
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise JsonInputError(
                f"not UTF-8: unpaired surrogate at character {exc.start}"
            ) from None
    scan = _SCAN
    if scan is not None and text[:1] in _TEXT_OPENERS:  # json.loads' decoder layers skipped
        try:
            value, end = scan(text, 0)
        except (ValueError, RecursionError, StopIteration):
            end = -1  # read again below: json.loads' error, with its message
        if end == len(text) or (end > 0 and not text[end:].strip(_JSON_SPACE)):
            return _checked(value, text, max_depth)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        offset = _byte_offset(text, exc.pos, start) if measure_bytes else None
        at = f" (byte offset {offset})" if offset is not None else ""
        raise JsonInputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}{at}: {exc.msg}", offset=offset
        ) from None
    except RecursionError:
        raise JsonInputError(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError:  # an integer literal over sys.get_int_max_str_digits()
        limit = sys.get_int_max_str_digits()
        match = re.search(rf"\d{{{limit + 1},}}", text)
        offset, at = None, ""
        if match is not None and measure_bytes:
            offset = _byte_offset(text, match.start(), start)
            at = f" at byte offset {offset}"
        elif match is not None:
            at = f" at character {match.start()}"
        raise JsonInputError(
            f"integer literal{at} has more than {limit} digits", offset=offset
        ) from None
    return _checked(value, text, max_depth)


_TEXT_OPENERS = frozenset("{[")


def _checked(value: Any, text: str, max_depth: int) -> Any:
    """``value``, read from ``text``, unless it nests deeper than ``max_depth`` or holds a
    lone surrogate (:class:`JsonInputError`). A text with at most ``max_depth`` brackets
    cannot nest deeper: the walk of the value is skipped (most request bodies)."""
    if (text.count("{") + text.count("[") > max_depth) and nesting_depth(
        value, limit=max_depth
    ) > max_depth:
        raise JsonInputError(f"JSON nested deeper than {max_depth} levels")
    if may_hold_lone_surrogates(text) and _has_lone_surrogate(value):
        raise JsonInputError(
            "not UTF-8: a string holds an unpaired surrogate escape (such as "
            "\\ud800), which no UTF-8 text can carry"
        )
    return value


def decode_json(
    data: str | bytes,
    *,
    source: str | None = None,
    path: str = "$",
    max_depth: int = MAX_DEPTH,
    start: int = 0,
) -> Any:
    """:func:`loads_untrusted`, failing with a :class:`SchemaError` that names ``source``."""
    try:
        return loads_untrusted(data, max_depth=max_depth, start=start)
    except JsonInputError as exc:
        raise SchemaError(exc.reason, path=path, source=source, offset=exc.offset) from None
