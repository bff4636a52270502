"""The requests :class:`~eog_core.gym.LeanTransport` writes: where a URL's requests go
(:class:`Target`), and a request's line and headers in one block of bytes, refused
(:class:`~eog_core.errors.RequestError`) when a header would break the framing.
"""

from __future__ import annotations

import base64
import functools
from urllib.parse import unquote, urlsplit

import attrs

from eog_core._redact import redact_url
from eog_core._version import __version__
from eog_core.errors import RequestError
from eog_core.gym._http import JSON_TYPE, HttpRequest

__all__ = ["TOKEN", "Target", "encode_head", "target_of"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_AGENT_LINE = f"User-Agent: eog-core/{__version__}\r\n"


@attrs.frozen
class Target:
    """Where a URL's requests go: the pool key, the address, the request line's target."""

    key: tuple[str, str, int]
    host: str
    port: int
    tls: bool
    path: str
    host_header: str
    authorization: str | None = None
    """``Basic ...`` from the URL's ``user:password@`` (as aiohttp sends it), else None."""


@functools.lru_cache(maxsize=512)
def target_of(url: str) -> Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    shown_url = repr(redact_url(url))
    if scheme not in ("http", "https"):
        raise ValueError(f"{shown_url}: only http and https URLs are supported")
    authorization = None
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("latin-1", "replace")).decode()
    host = parts.hostname
    if not host:
        raise ValueError(f"{shown_url}: no host")
    try:
        host.encode("idna")
    except UnicodeError as exc:
        raise ValueError(f"{shown_url}: the host cannot be encoded ({exc})") from None
    port = parts.port or (443 if scheme == "https" else 80)
    default = port == (443 if scheme == "https" else 80)
    shown = f"[{host}]" if ":" in host else host
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(c in path for c in " \r\n\t\x00"):
        raise ValueError(f"{shown_url}: the path holds whitespace or control characters")
    return Target(
        key=(scheme, host, port),
        host=host,
        port=port,
        tls=scheme == "https",
        path=path,
        host_header=shown if default else f"{shown}:{port}",
        authorization=authorization,
    )


_CHECKED_NAMES: set[str] = set()
TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_OURS = frozenset({"host", "content-length", "transfer-encoding", "connection", "content-type"})


def _check_name(name: str) -> None:
    if not name or not set(name) <= TOKEN:
        raise RequestError(f"header name {name!r} is not an HTTP token")
    if name.lower() in _OURS:
        raise RequestError(f"header {name!r} is set by the transport, not by the caller")
    if name.lower() == "user-agent" and len(_AGENT_NAMES) < 64:
        _AGENT_NAMES.add(name)
    if len(_CHECKED_NAMES) < 1024:
        _CHECKED_NAMES.add(name)


_METHODS = {"GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS"}
_AGENT_NAMES: set[str] = set()
"""The spellings of ``User-Agent`` callers have set (then ours is not added)."""


def encode_head(request: HttpRequest, target: Target, body: bytes | None) -> bytes:
    """The request line and headers, ending in the blank line; :class:`RequestError` when a
    header would break the framing (a CR or LF in a value, a name that is not a token)."""
    method, headers = request.method, request.headers
    if method not in _METHODS:
        if not method or not set(method) <= TOKEN or method != method.upper():
            raise RequestError(f"HTTP method {method[:40]!r} is not an upper-case token")
        if len(_METHODS) < 64:
            _METHODS.add(method)
    for name in headers:
        if name not in _CHECKED_NAMES:
            _check_name(name)
    block = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
    if block.count("\n") != len(headers) or block.count("\r") != len(headers) or "\x00" in block:
        raise RequestError("a request header value holds a CR, LF or NUL (header injection)")
    if body is not None:
        framing = f"Content-Type: {JSON_TYPE}\r\nContent-Length: {len(body)}\r\n"
    elif request.method in _BODY_METHODS:
        framing = "Content-Length: 0\r\n"
    else:
        framing = ""
    agent = "" if _AGENT_NAMES and not _AGENT_NAMES.isdisjoint(headers) else _AGENT_LINE
    if target.authorization is not None:
        if any(name.lower() == "authorization" for name in headers):
            raise RequestError(
                "the request could not be built: both credentials in the URL and an "
                "Authorization header (as aiohttp, we send one or the other)"
            )
        agent += f"Authorization: {target.authorization}\r\n"
    return (
        f"{method} {target.path} HTTP/1.1\r\nHost: {target.host_header}\r\n"
        f"{agent}{block}{framing}\r\n"
    ).encode()
