"""Who may reach the gateway: loopback hosts, and the bearer tokens read from the environment."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

from eog_core.errors import UsageError

__all__ = ["is_loopback", "token_from_env"]

_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_from_env(
    variable: str | None, environ: Mapping[str, str] | None = None, *, flag: str = "--token-env"
) -> str | None:
    """The bearer token held by environment variable ``variable`` (UsageError when unset)."""
    if variable is None:
        return None
    value = (environ if environ is not None else os.environ).get(variable)
    if not value:
        raise UsageError(f"{flag} {variable}: that environment variable is not set")
    return value
