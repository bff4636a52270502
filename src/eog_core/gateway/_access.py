"""Who may reach the gateway: loopback hosts (the listening address, and a request's ``Host``
and ``Origin``), and the bearer tokens read from the environment."""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import attrs

from eog_core._http1 import host_allowed, is_loopback
from eog_core.errors import UsageError
from eog_core.gateway._control import json_error
from eog_core.gateway._http import Answer, Request

__all__ = ["Admission", "http_error", "is_loopback", "token_from_env"]


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


@attrs.frozen
class Admission:
    """The check a request passes before its body is read: its bearer token (when one is
    set; the control API's own when given), then, unless ``allow_remote``, a loopback
    ``Host`` (a page whose name was rebound to 127.0.0.1 sends its own name: 403
    ``forbidden_host``) and a loopback ``Origin`` (403 ``forbidden_origin``; one that does
    not parse, 400)."""

    expected: Mapping[str, bytes]
    allow_remote: bool

    @classmethod
    def of(cls, *, token: str | None, control_token: str | None, allow_remote: bool) -> Admission:
        pairs = (("mcp", token), ("control", control_token or token))
        expected = {key: f"Bearer {value}".encode() for key, value in pairs if value is not None}
        return cls(expected, allow_remote)

    def __call__(self, request: Request) -> Answer | None:
        headers = request.headers
        if self.expected:
            expected = self.expected.get("mcp" if request.path.startswith("/mcp/") else "control")
            given = headers.get("authorization", "")
            if expected is not None and not hmac.compare_digest(given.encode("latin-1"), expected):
                return json_error(
                    401,
                    "unauthorized",
                    "this gateway needs 'Authorization: Bearer <token>'",
                    headers={"WWW-Authenticate": "Bearer"},
                )
        if self.allow_remote:
            return None
        if not host_allowed(headers.get("host"), allow_remote=False):
            return json_error(
                403, "forbidden_host", "this gateway answers to localhost and loopback addresses"
            )
        origin = headers.get("origin")
        if origin is not None:
            try:
                host = urlsplit(origin).hostname or ""
            except ValueError:
                return json_error(400, "bad_request", "bad request: an Origin that does not parse")
            if not is_loopback(host):
                return json_error(
                    403, "forbidden_origin", "requests from web pages of other hosts are refused"
                )
        return None


_HTTP_CODES = {413: "too_large", 431: "too_large", 500: "internal_error"}


def http_error(status: int, message: str) -> Answer:
    """A request the HTTP server refused itself, answered as the control API's errors are."""
    return json_error(status, _HTTP_CODES.get(status, "http_error"), message)
