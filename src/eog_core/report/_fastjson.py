"""JSON for large runs: orjson when installed (the ``report`` extra brings it), else the standard library.

orjson reads and writes several times faster, which is most of the build time of
a report of thousands of rollouts. It refuses what the standard library accepts
(lone surrogates, ``NaN``, integers past 64 bits): then the standard library
does the line or the document, so both give the same result on every input.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from typing import Any

__all__ = ["dumps_for_script", "loads", "paused_gc"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - the report extra installs it
    _orjson = None


def loads(text: str) -> Any:
    """One JSON document; errors are the standard library's ``json.JSONDecodeError``."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(text)


def dumps_for_script(data: Any) -> str:
    """Compact JSON in which no ``<`` appears as itself (safe in a ``<script>`` element)."""
    if _orjson is not None:
        try:
            raw: bytes = _orjson.dumps(data, default=str)
        except TypeError:
            pass
        else:
            return raw.replace(b"<", b"\\u003c").decode("utf-8")
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")


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
