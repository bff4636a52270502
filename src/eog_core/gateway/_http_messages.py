"""The gateway's HTTP messages: a request as the routes see it, an answer encoded. Small
records and pure functions; the bytes are read by :mod:`eog_core._http1` (llhttp) and the
connections handled in ``_http.py``.
"""

from __future__ import annotations

import http
import time
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote

from eog_core._http1 import Message
from eog_core._mcp_server import dumps

__all__ = ["Answer", "Request", "json_answer", "request_of"]

_STATUS_LINES = {
    status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode())
    for status in http.HTTPStatus
}
_JSON = "application/json; charset=utf-8"
_TYPE_LINES = {kind: f"Content-Type: {kind}\r\n".encode() for kind in (_JSON, "text/event-stream")}


class Request:
    """One request, read whole: header names lower-cased (a repeated header's values joined
    with ``", "``), the path percent-decoded without its query."""

    __slots__ = ("body", "headers", "host", "keep_alive", "method", "path", "version")

    def __init__(
        self,
        method: str,
        path: str,
        version: str,
        headers: dict[str, str],
        host: str,
        *,
        keep_alive: bool | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.host = host
        """The ``Host`` the client asked for (the bound address when it sent none)."""
        self.body = b""
        if keep_alive is None:
            connection = headers.get("connection", "").lower()
            keep_alive = (
                "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
            )
        self.keep_alive = keep_alive

    def origin(self) -> str:
        """``http://host[:port]`` as the client addressed this server."""
        return f"http://{self.host}"


class Answer:
    """A response: status, body bytes, content type and extra headers."""

    __slots__ = ("body", "content_type", "headers", "status")

    def __init__(
        self,
        status: int = 200,
        body: bytes = b"",
        *,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers

    def encode(self, *, head_only: bool, keep_alive: bool) -> bytes:
        """The response as bytes: status line, headers, body (none for HEAD), in one piece."""
        status = self.status
        content_type = self.content_type
        headers = self.headers
        parts = [
            _STATUS_LINES.get(status) or b"HTTP/1.1 %d Unknown\r\n" % status,
            # a 204 or 304 has no Content-Length (RFC 9110, 8.6)
            b"" if status == 204 or status == 304 else b"Content-Length: %d\r\n" % len(self.body),
            _date_line(),
            b""
            if content_type is None
            else (_TYPE_LINES.get(content_type) or f"Content-Type: {content_type}\r\n".encode()),
            "".join([f"{name}: {value}\r\n" for name, value in headers.items()]).encode()
            if headers
            else b"",
            b"\r\n" if keep_alive else b"Connection: close\r\n\r\n",
        ]
        if not head_only:
            parts.append(self.body)
        return b"".join(parts)


def json_answer(value: Any, status: int = 200, *, headers: dict[str, str] | None = None) -> Answer:
    """``value`` as a JSON answer."""
    return Answer(status, dumps(value).encode(), content_type=_JSON, headers=headers)


_date_cache: list[Any] = [0, b""]


def _date_line() -> bytes:
    """The ``Date`` header line, formatted once a second."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[:] = [now, b"Date: %s\r\n" % formatdate(now, usegmt=True).encode()]
    return _date_cache[1]  # type: ignore[no-any-return]


def request_of(message: Message, local_host: str) -> Request | None:
    """The Request a message read by :class:`~eog_core._http1.RequestReader` stands for: its
    target's path percent-decoded without its query (an absolute target reduced to its path).
    ``local_host`` stands for a missing ``Host``. None when the target is not a path."""
    target = message.target
    if not target.startswith("/"):
        scheme, sep, rest = target.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            return None
        target = "/" + rest.partition("/")[2]
    path = target.partition("?")[0]
    if "%" in path:
        path = unquote(path)
    headers = message.headers
    host = headers.get("host") or local_host
    version = f"HTTP/{message.version}"
    return Request(message.method, path, version, headers, host, keep_alive=message.keep_alive)
