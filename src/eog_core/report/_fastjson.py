"""JSON for large runs: orjson when installed (the ``report`` and ``fast-json`` extras bring
it), else the standard library.

orjson reads and writes several times faster, which is most of the build time of
a report of thousands of rollouts; what it writes goes through
:func:`eog_core._json.dumps_compact_bytes`, the same bytes without it. It refuses some of what the standard library accepts
(lone surrogates, ``NaN``): then the standard library reads the document. One
difference is silent: orjson reads an integer past 64 bits as a float, so a
caller that must keep such values exact checks with :func:`may_hold_big_integer`
and reads again with :func:`exact_loads`. Nesting past either library's recursion limit
is read and written with the deep values cut (``eog_core._jsonl``), never a ``RecursionError``.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterator
from typing import Any

from eog_core._json import dumps_compact_bytes
from eog_core._jsonl import cut_deep, loads_line

__all__ = [
    "dumps_for_script",
    "dumps_for_script_bytes",
    "exact_loads",
    "fast_loads",
    "loads",
    "may_hold_big_integer",
    "paused_gc",
]

_BIG = float(2**63)

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - the report extra installs it
    _orjson = None

#: orjson's reader, the fast path of :func:`eog_core._jsonl.loads_line` (None without orjson).
fast_loads: Callable[[bytes], Any] | None = None if _orjson is None else _orjson.loads


def loads(text: str | bytes) -> Any:
    """One JSON document; errors are the standard library's ``json.JSONDecodeError``."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return exact_loads(text)


def exact_loads(text: str | bytes) -> Any:
    """The standard library's reading (every integer exact); a document nested too deeply
    for it is read with its deep values cut."""
    try:
        return json.loads(text)
    except RecursionError:
        return loads_line(text)


def may_hold_big_integer(value: Any) -> bool:
    """True when ``value`` is a float as large as an integer orjson could not keep exact."""
    return type(value) is float and abs(value) >= _BIG


def dumps_for_script_bytes(data: Any) -> bytes:
    """Compact UTF-8 JSON in which no ``<`` appears as itself (safe in a ``<script>`` element):
    :func:`eog_core._json.dumps_compact_bytes` (orjson or the standard library, the same
    bytes), with values nested too deeply for either cut (``eog_core._jsonl``)."""
    try:
        raw = dumps_compact_bytes(data)
    except RecursionError:
        raw = dumps_compact_bytes(cut_deep(data))
    return raw.replace(b"<", b"\\u003c")  # "<" is only ever inside a string


def dumps_for_script(data: Any) -> str:
    """:func:`dumps_for_script_bytes` as text."""
    return dumps_for_script_bytes(data).decode("utf-8")


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while millions of acyclic objects are built (the records
    hold no cycles; each collection would walk them all again)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
