"""Writing JSON: lines and answers that always encode and never split, and compact bytes.

:func:`dumps_line` writes one JSON Lines record or wire answer; :func:`dumps_utf8` a body
for a server that refuses lone surrogates; :func:`dumps_compact` a request body, with
CPython's C encoder built once. :func:`dumps_compact_bytes` writes the report's data with
orjson when it is installed (the ``fast-json`` extra) and the standard library otherwise,
byte for byte the same (tests/test_json_write.py): whatever orjson would write
differently goes to the standard library. Nothing here reads: orjson never reads what a
verifier, the model or a parity comparison sees (it reads big integers and NaN otherwise).
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable
from typing import Any

from eog_core._json._read import nesting_depth, repair_text

__all__ = [
    "COMPACT_MAX_DEPTH",
    "compact_encoder",
    "default_encoder",
    "dumps_compact",
    "dumps_compact_bytes",
    "dumps_default",
    "dumps_line",
    "dumps_utf8",
]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - the fast-json extra installs it
    _orjson = None

# Characters json.dumps(ensure_ascii=False) writes raw that str.splitlines() (and some JSON Lines
# readers, and JavaScript before ES2019) treat as line ends, and lone surrogates, which no UTF-8
# text can carry: written as JSON's six-character \u escapes, the line is valid UTF-8 JSON that
# reads back to the same string.
_LINE_UNSAFE = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")
_LINE_UNSAFE_UTF8 = (
    (b"\xc2\x85", b"\\u0085"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""One encoder for every line and answer: ``json.dumps`` with options builds a new one each call."""


def dumps_line(value: Any) -> str:
    """One JSON Lines record or wire answer: UTF-8 JSON (``default=str``) with no raw line
    separator in it and lone surrogates escaped (``\\ud83d``), so it always encodes to UTF-8,
    never splits, and reads back equal."""
    text = _LINE_ENCODER.encode(value)
    return _LINE_UNSAFE.sub(_escape, text) if _LINE_UNSAFE.search(text) else text


def dumps_utf8(value: Any) -> tuple[bytes, int]:
    """``value`` as UTF-8 JSON bytes for a server to parse, lone surrogates replaced by U+FFFD
    (servers reject them, escaped or not); returns the bytes and how many were replaced."""
    text = json.dumps(value, ensure_ascii=False)
    text, replaced = repair_text(text)
    return text.encode("utf-8"), replaced


_PROBE = {"a": [1, 2.5, None, True, "\u00e9\n"], "b": {"c": -0.0, "d": 1e300}}


def compact_encoder(make: Any) -> Callable[[Any], str]:
    """``json.dumps(value, separators=(",", ":"), allow_nan=False)``, built once from
    ``make`` (``json.encoder.c_make_encoder``, not a public name), or the public
    ``JSONEncoder`` when ``make`` is None, takes other arguments or writes otherwise.

    ``json.dumps`` builds its encoder on every call. Circular data meets the recursion
    limit (RecursionError) instead of the circular check: a request body is never
    circular, and both are refused.
    """
    fallback = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    try:
        encode = make(
            None,
            json.JSONEncoder().default,
            json.encoder.encode_basestring_ascii,
            None,
            ":",
            ",",
            False,
            False,
            False,
        )
        if "".join(encode(_PROBE, 0)) != fallback(_PROBE):
            return fallback
    except TypeError:  # not CPython (None), or a C encoder that takes other arguments
        return fallback
    return lambda value: "".join(encode(value, 0))


dumps_compact = compact_encoder(getattr(json.encoder, "c_make_encoder", None))
"""A request body: compact ASCII JSON, NaN refused (ValueError)."""


def default_encoder(make: Any) -> Callable[[Any], str]:
    """``json.dumps(value)`` with its defaults (ASCII, ``", "`` and ``": "``), built once from
    ``make`` as :func:`compact_encoder` is, or ``json.dumps`` itself when ``make`` is None,
    takes other arguments or writes otherwise. For values read from JSON (never circular)."""
    try:
        encode = make(
            None,
            json.JSONEncoder().default,
            json.encoder.encode_basestring_ascii,
            None,
            ": ",
            ", ",
            False,
            False,
            True,
        )
        if "".join(encode(_PROBE, 0)) != json.dumps(_PROBE):
            return json.dumps
    except TypeError:
        return json.dumps
    return lambda value: "".join(encode(value, 0))


dumps_default = default_encoder(getattr(json.encoder, "c_make_encoder", None))
"""``json.dumps(value)`` of a value read from JSON (a gym's result as the observation text)."""


class _NotNative(TypeError):
    """orjson met a value it would write otherwise than the standard library."""


def _not_native(value: Any) -> Any:
    raise _NotNative


def _default(value: Any) -> Any:
    """What a value JSON has no type for becomes: an Enum member its value (as orjson
    writes it), anything else its ``str``."""
    return value.value if isinstance(value, enum.Enum) else str(value)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has no such numbers; orjson writes null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


_COMPACT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default
).encode
# orjson writes 1e-05 as 0.00001 and 2.5e-07 as 2.5e-7 (Python: repr, two exponent digits);
# a match (in a string too) sends the value to the standard library
_ORJSON_DIFFERS = re.compile(rb"0\.0000|e-\d(?!\d)")
if _orjson is not None:
    _ORJSON_OPTIONS = (
        _orjson.OPT_PASSTHROUGH_SUBCLASS
        | _orjson.OPT_PASSTHROUGH_DATETIME
        | _orjson.OPT_PASSTHROUGH_DATACLASS
    )


COMPACT_MAX_DEPTH = 254
"""The deepest nesting :func:`dumps_compact_bytes` writes (orjson's limit, kept without it)."""


def _stdlib_compact(value: Any) -> bytes:
    if nesting_depth(value, limit=COMPACT_MAX_DEPTH) > COMPACT_MAX_DEPTH:
        raise RecursionError(f"nested deeper than {COMPACT_MAX_DEPTH} levels")
    try:
        text = _COMPACT(value)
    except ValueError as exc:  # NaN or an infinity somewhere
        if "JSON compliant" not in str(exc):
            raise
        text = _COMPACT(_finite(value))
    if _LINE_UNSAFE.search(text):
        text = _LINE_UNSAFE.sub(_escape, text)
    return text.encode("utf-8")


def dumps_compact_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON (``separators=(",", ":")``) that always encodes and never splits a
    line: NaN and infinities written as ``null``, an Enum member as its value, other
    non-JSON values as their ``str``, line separators and lone surrogates escaped.

    With orjson installed, it writes what it writes exactly as the standard library
    does (str, int within 64 bits, float, bool, None, dict with str keys, list, tuple,
    UUID, Enum); anything else (a big integer, a lone surrogate, a key that is not a
    str, a subclass, a datetime or dataclass, nesting past 255, a float it spells
    otherwise) is written by the standard library. Nesting deeper than
    :data:`COMPACT_MAX_DEPTH` raises RecursionError either way (the caller cuts it).
    """
    if _orjson is not None:
        try:
            raw: bytes = _orjson.dumps(value, default=_not_native, option=_ORJSON_OPTIONS)
        except TypeError as exc:  # orjson.JSONEncodeError, _NotNative among them
            if str(exc) == "Recursion limit reached":
                raise RecursionError(f"nested deeper than {COMPACT_MAX_DEPTH} levels") from None
        else:
            if not _ORJSON_DIFFERS.search(raw):
                for unsafe, escaped in _LINE_UNSAFE_UTF8:
                    if unsafe in raw:
                        raw = raw.replace(unsafe, escaped)
                return raw
    return _stdlib_compact(value)
