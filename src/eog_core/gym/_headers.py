"""Per-call HTTP headers: a task's context map and its gym's credentials.

Two context modes: ``"upstream"`` maps keys exactly as the upstream harness
does; ``"strict"`` also trims values and drops empty keys. Both refuse what
cannot be sent (CR, LF, NUL) with a :class:`HeaderError` naming the header.
Tokens never appear in a repr, a str or a log line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from eog_core.errors import HeaderError
from eog_core.tasks import AuthConfig

__all__ = [
    "AuthConfig",
    "HeaderError",
    "HeaderMode",
    "auth_headers",
    "context_headers",
    "context_text",
    "shared_context_headers",
]

HeaderMode = Literal["upstream", "strict"]
AuthType = Literal["bearer", "api_key"]

# Field values may hold tabs but no other control character (RFC 9110 section 5.5).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# RFC 9110 field names are tokens: a colon or a space would forge or break headers.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def auth_headers(auth: AuthConfig | None) -> dict[str, str]:
    """The header carrying ``auth``'s credential (empty without auth)."""
    if auth is None:
        return {}
    value = f"Bearer {auth.token}" if auth.type == "bearer" else auth.token
    _refuse_unsendable(auth.header_name, value)
    return {auth.header_name: value}


def checked_header(name: str, value: str) -> str:
    """``value``, after checking that ``name: value`` can be sent as a header."""
    _refuse_unsendable(name, value)
    return value


def context_headers(
    context: Mapping[str, Any] | None, *, mode: HeaderMode = "strict"
) -> dict[str, str]:
    """Map a task's context (``{"user_email": ...}``) to ``x-`` headers."""
    headers: dict[str, str] = {}
    if not context:
        return headers
    for raw_key, raw_value in context.items():
        key = str(raw_key).strip()
        value = str(raw_value)
        if mode == "strict":
            value = value.strip()
            if not key:
                continue
        name = key if key.lower().startswith("x-") else "x-" + key.lower().replace("_", "-")
        _refuse_unsendable(name, value)
        headers[name] = value
    return headers


_SHARED: dict[tuple[HeaderMode, tuple[tuple[str, str], ...]], Mapping[str, str]] = {}
_SHARED_MAX = 4096


def shared_context_headers(
    context: Mapping[str, Any] | None, *, mode: HeaderMode = "strict"
) -> Mapping[str, str]:
    """:func:`context_headers`, computed once per distinct context (every task of a
    gym usually has the same one). The result is shared: never mutate it."""
    if not context:
        return _NONE
    key = (mode, context_text(context))
    shared = _SHARED.get(key)
    if shared is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        shared = _SHARED[key] = context_headers(context, mode=mode)
    return shared


_NONE: Mapping[str, str] = {}


def context_text(context: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """What a context's headers depend on: its keys' and values' text, in order
    (``1``, ``1.0`` and ``True`` differ; a dict changed in place reads anew)."""
    return tuple((str(k), str(v)) for k, v in context.items()) if context else ()


def _refuse_unsendable(name: str, value: str) -> None:
    if not _TOKEN.fullmatch(name):
        bad = next((c for c in name if not _TOKEN.fullmatch(c)), "")
        raise HeaderError(
            f"name contains {bad!r}, which is not allowed in a header name", header=name
        )
    if control := _CONTROL.search(value):
        raise HeaderError(f"value contains the control character {control.group()!r}", header=name)
