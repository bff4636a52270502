"""Keeping secrets out of reprs, messages and logs: URL credentials and token-like keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["redact", "redact_url", "redacted_mapping_repr", "redacted_url_repr"]

_SECRET_KEY = re.compile(r"auth|token|secret|passw|api[-_]?key|cookie|credential", re.IGNORECASE)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@")


def redact_url(url: object) -> str:
    """``url`` with any ``user:password@`` part replaced by ``***@``."""
    return _USERINFO.sub(r"\1***@", str(url))


def redact(value: Any) -> Any:
    """A copy of ``value`` with the values of secret-looking keys replaced by ``'***'``."""
    if isinstance(value, Mapping):
        return {
            key: "***"
            if isinstance(key, str)
            and _SECRET_KEY.search(key)
            and not isinstance(value[key], Mapping)
            else redact(value[key])
            for key in value
        }
    if isinstance(value, list | tuple):
        return type(value)(redact(item) for item in value)
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value


def redacted_mapping_repr(value: Mapping[str, Any]) -> str:
    """The repr of a mapping that may hold tokens (a legacy ``auth_config``, auth headers)."""
    return repr(redact(value))


def redacted_url_repr(url: object) -> str:
    """The repr of a URL field, credentials masked."""
    return repr(redact_url(url))
