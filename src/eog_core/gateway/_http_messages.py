"""The gateway's HTTP messages: a request's head parsed, a chunked body decoded, an answer
encoded. Pure functions and small records; the connection handling is in ``_http.py``.

A head is parsed strictly (what a lenient parser lets through is how requests are
smuggled past a proxy): a malformed request line, a header line without a colon or
with a name that is not a token (a space before the colon, a folded line), a bare CR
or LF, a NUL, or more than :data:`MAX_HEADERS` headers are refused; two different
``Content-Length`` or ``Host`` values are refused, other repeated headers joined.
"""

from __future__ import annotations

import http
import re
import time
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote

from eog_core._mcp_server import dumps

__all__ = [
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "Answer",
    "ChunkedBody",
    "Refused",
    "Request",
    "content_length",
    "json_answer",
    "parse_head",
]

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
_REASONS = {status.value: status.phrase.encode() for status in http.HTTPStatus}
_JSON = "application/json; charset=utf-8"
_TYPE_LINES = {kind: f"Content-Type: {kind}\r\n".encode() for kind in (_JSON, "text/event-stream")}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's ``token``)."""
_NAMES: dict[str, str] = {}
"""Header names as sent, checked, to their lower-cased keys (the few a client sends: a
dictionary lookup a header instead of a check and a ``lower()``); bounded."""
_NAMES_KEPT = 1024
_REQUEST_LINE = re.compile(r"([A-Z]+) ([^\x00-\x20\x7f]+) (HTTP/[0-9]\.[0-9])")


class Request:
    """One request, read whole: header names lower-cased (a repeated header's values joined
    with ``", "``), the path percent-decoded without its query."""

    __slots__ = ("body", "headers", "host", "keep_alive", "method", "path", "version")

    def __init__(
        self, method: str, path: str, version: str, headers: dict[str, str], host: str
    ) -> None:
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.host = host
        """The ``Host`` the client asked for (the bound address when it sent none)."""
        self.body = b""
        connection = headers.get("connection", "").lower()
        self.keep_alive = (
            "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        )

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
        content_type = self.content_type
        type_line = (
            b""
            if content_type is None
            else (_TYPE_LINES.get(content_type) or f"Content-Type: {content_type}\r\n".encode())
        )
        extra = (
            "".join([f"{name}: {value}\r\n" for name, value in self.headers.items()]).encode()
            if self.headers
            else b""
        )
        status = self.status
        length = (
            b"" if status == 204 or status == 304 else b"Content-Length: %d\r\n" % len(self.body)
        )  # a 204 or 304 has no Content-Length (RFC 9110, 8.6)
        head = b"HTTP/1.1 %d %s\r\n%sDate: %s\r\n%s%s%s" % (
            status,
            _REASONS.get(status, b"Unknown"),
            length,
            _date(),
            type_line,
            extra,
            b"\r\n" if keep_alive else b"Connection: close\r\n\r\n",
        )
        return head if head_only else head + self.body


def json_answer(value: Any, status: int = 200, *, headers: dict[str, str] | None = None) -> Answer:
    """``value`` as a JSON answer."""
    return Answer(status, dumps(value).encode(), content_type=_JSON, headers=headers)


_date_cache: list[Any] = [0, b""]


def _date() -> bytes:
    """The ``Date`` header's value, formatted once a second."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[:] = [now, formatdate(now, usegmt=True).encode()]
    return _date_cache[1]  # type: ignore[no-any-return]


class Refused(Exception):
    """A request refused by the server itself (malformed, too large): the answer, and
    whether the connection must close after it."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        close: bool = True,
        answer: Answer | None = None,
        request: Request | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close
        self.answer = answer
        """The answer to give (built by the server's ``error`` when None)."""
        self.request = request
        """The refused request when its head was read (None: the head itself was malformed)."""


def parse_head(text: str, local_host: str) -> Request:
    """A request's head (``text``: up to, not including, its blank line; decoded as latin-1)
    as a Request without its body. ``local_host`` stands for a missing ``Host``. Raises Refused."""
    line, _, block = text.partition("\r\n")
    first = _REQUEST_LINE.fullmatch(line)
    if first is None:
        raise Refused(400, "bad request: a malformed request line")
    method, target, version = first.groups()
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused(505, f"HTTP version not supported: {version[:20]}")
    headers: dict[str, str] = {}
    if block:
        lines = block.split("\r\n")
        if len(lines) > MAX_HEADERS:
            raise Refused(431, f"more than {MAX_HEADERS} request headers")
        if not block.count("\r") == block.count("\n") == len(lines) - 1 or "\0" in block:
            raise Refused(400, "bad request: a bare CR, LF or NUL in the request's head")
        names = _NAMES
        for field in lines:
            name, colon, value = field.partition(":")
            if not colon:
                raise Refused(400, "bad request: a malformed header line (no colon)")
            key = names.get(name) or _header_key(name)
            if key in headers:
                headers = _merged(lines)
                break
            headers[key] = value.strip(" \t")
    if not target.startswith("/"):
        scheme, sep, rest = target.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            raise Refused(400, "bad request: the request target is not a path")
        target = "/" + rest.partition("/")[2]
    path = target.partition("?")[0]
    if "%" in path:
        path = unquote(path)
    return Request(method, path, version, headers, headers.get("host") or local_host)


def _header_key(name: str) -> str:
    """The key of a header name not seen before, once it is checked to be a token."""
    if _TOKEN.fullmatch(name) is None:  # no colon, a space before it, a folded line
        raise Refused(400, "bad request: a malformed header line")
    key = name.lower()
    if len(_NAMES) < _NAMES_KEPT:
        _NAMES[name] = key
    return key


def _merged(lines: list[str]) -> dict[str, str]:
    """Headers with repeated names: values joined with ", "; two different lengths or hosts
    are refused (a request smuggling vector)."""
    headers: dict[str, str] = {}
    for field in lines:
        name, colon, value = field.partition(":")
        if not colon:
            raise Refused(400, "bad request: a malformed header line (no colon)")
        key, value = _NAMES.get(name) or _header_key(name), value.strip(" \t")
        if key not in headers:
            headers[key] = value
        elif key in ("content-length", "host"):
            if headers[key] != value:
                raise Refused(400, f"bad request: two different {key} headers")
        else:
            headers[key] = f"{headers[key]}, {value}"
    return headers


def content_length(value: str | None) -> int:
    """The body's length a ``Content-Length`` value gives (0 without one). Raises Refused."""
    if value is None:
        return 0
    if not value.isdigit() or not value.isascii() or len(value) > 18:
        raise Refused(400, "bad request: a malformed Content-Length")
    return int(value)


_HEX = b"0123456789abcdefABCDEF"


class ChunkedBody:
    """A chunked body decoded as it arrives: each call to :meth:`feed` goes on from where
    the last stopped (a body sent a byte at a time costs linear time, not quadratic)."""

    __slots__ = ("at", "max_body", "pieces", "size")

    def __init__(self, start: int, max_body: int) -> None:
        self.at = start  # where the next chunk's size line starts in the buffer
        self.max_body = max_body
        self.pieces: list[bytes] = []
        self.size = 0

    def feed(self, buffer: bytearray) -> tuple[bytes, int] | None:
        """The body and where it ends in ``buffer`` once whole, else None. Raises Refused."""
        at = self.at
        while True:
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                if len(buffer) - at > 1024:
                    raise Refused(400, "bad request: a malformed chunk size")
                return None
            size_text = bytes(buffer[at:line_end]).partition(b";")[0].strip(b" \t")
            if not size_text or size_text.strip(_HEX) or len(size_text) > 15:
                raise Refused(400, "bad request: a malformed chunk size")
            chunk = int(size_text, 16)
            if chunk == 0:
                trailer_end = buffer.find(b"\r\n\r\n", line_end)
                if trailer_end < 0:
                    if len(buffer) - line_end > MAX_HEAD_BYTES:
                        raise Refused(431, "the request's trailers are too large")
                    return None
                return b"".join(self.pieces), trailer_end + 4
            if self.size + chunk > self.max_body:
                raise Refused(413, f"the request body is over {self.max_body} bytes")
            data_at = line_end + 2
            if len(buffer) < data_at + chunk + 2:
                return None
            if buffer[data_at + chunk : data_at + chunk + 2] != b"\r\n":
                raise Refused(400, "bad request: a chunk without its CRLF")
            self.pieces.append(bytes(buffer[data_at : data_at + chunk]))
            self.size += chunk
            at = self.at = data_at + chunk + 2
