"""Reading an answer off a :class:`~eog_core.gym._lean_connection.Connection`: the head
(status line and headers, checked strictly), how the body is framed (length, chunks
or the connection's end), the body whole or as it arrives (event streams), and
whether the connection may carry another request.
"""

from __future__ import annotations

from typing import Any

import attrs

from eog_core.gym._http import (
    HttpRequest,
    HttpResponse,
    decoded_body,
    media_type,
    new_response,
    read_event_stream,
    status_failure,
)
from eog_core.gym._lean_connection import Connection, Lost, Malformed
from eog_core.gym._lean_request import TOKEN

__all__ = ["HEAD_MAX", "MAX_BODY", "Headers", "read_answer"]

MAX_BODY = 256 * 1024 * 1024
"""The default bound on an answer's body: 256 MiB (a big SQL result fits; one
streaming gym grew an unbounded reader to 295 MiB, issue 29)."""

HEAD_MAX = 64 * 1024
"""The most bytes an answer's status line and headers may take."""
_NO_BODY_STATUSES = frozenset({204, 304})
_HEX = frozenset(b"0123456789abcdefABCDEF")


class Headers(dict[str, str]):
    """An answer's headers: names lower-cased, looked up in any case (as aiohttp's)."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


@attrs.define(eq=False)
class Framing:
    """How an answer's body ends: after ``length`` bytes, with the last chunk, or at EOF."""

    chunked: bool
    length: int | None  # None and not chunked: read until the connection ends


class Body:
    """An answer's body as an async iterator of the chunks as they arrive (for event streams)."""

    __slots__ = ("allowed", "conn", "done", "framing", "left", "max_body")

    def __init__(self, conn: Connection, framing: Framing, max_body: int) -> None:
        self.conn, self.framing, self.done = conn, framing, False
        self.left = framing.length
        self.max_body = max_body
        self.allowed = max_body
        """Bytes the body may still bring (:func:`too_large` past it)."""

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        if self.done:
            raise StopAsyncIteration
        conn, buffer = self.conn, self.conn.buffer
        if self.framing.chunked:
            chunk = await next_chunk(conn, self.allowed, self.max_body)
            if not chunk:
                self.done = True
                raise StopAsyncIteration
            self.allowed -= len(chunk)
            return chunk
        if self.left is not None:  # Content-Length
            if self.left == 0:
                self.done = True
                raise StopAsyncIteration
            while not buffer:
                await conn.more()
            piece = bytes(buffer[: self.left])
            del buffer[: len(piece)]
            self.left -= len(piece)
            return self._counted(piece)
        while not buffer:  # until the connection ends
            try:
                await conn.more()
            except Lost:
                if conn.expired or conn.dropped or conn.error is not None:
                    raise  # timed out, closed by us, or reset: not the body's end
                self.done = True
                raise StopAsyncIteration from None
        piece = bytes(buffer)
        buffer.clear()
        return self._counted(piece)

    def _counted(self, piece: bytes) -> bytes:
        self.allowed -= len(piece)
        if self.allowed < 0:
            raise too_large(self.max_body)
        return piece


def too_large(max_body: int) -> Malformed:
    """The answer's body is over the transport's bound (``LeanTransport.max_body``)."""
    return Malformed(f"an answer body over {max_body} bytes (the transport's max_body)")


async def next_chunk(conn: Connection, allowed: int, max_body: int) -> bytes:
    """One chunk of a chunked body (``b""`` for the last, its trailers read and dropped);
    a chunk larger than ``allowed`` is refused before it is buffered."""
    buffer = conn.buffer
    while (line_end := buffer.find(b"\r\n")) < 0:
        if len(buffer) > 4096:
            raise Malformed("a chunk-size line longer than 4096 bytes")
        await conn.more()
    size_text = bytes(buffer[:line_end]).partition(b";")[0].strip(b" \t")
    if not size_text or not set(size_text) <= _HEX or len(size_text) > 16:
        raise Malformed(f"a malformed chunk size {size_text[:40]!r}")
    size = int(size_text, 16)
    if size > allowed:
        raise too_large(max_body)
    del buffer[: line_end + 2]
    if size == 0:
        while True:  # trailers, up to the blank line
            while (line_end := buffer.find(b"\r\n")) < 0:
                if len(buffer) > HEAD_MAX:
                    raise Malformed("chunked trailers larger than 64 KiB")
                await conn.more()
            del buffer[: line_end + 2]
            if line_end == 0:
                return b""
    while len(buffer) < size + 2:
        await conn.more()
    if buffer[size : size + 2] != b"\r\n":
        raise Malformed("a chunk not followed by CRLF")
    chunk = bytes(buffer[:size])
    del buffer[: size + 2]
    return chunk


_NAMES: dict[str, str] = {}
"""Header names seen in answers -> their lower-cased form (checked once: a token)."""


def parse_head(head: bytes) -> tuple[int, bool, Headers]:
    """Status, whether HTTP/1.1, and the headers of an answer's head (without the blank line)."""
    text = head.decode("latin-1")  # every byte decodes: the checks below are on the text
    status_line, _, rest = text.partition("\r\n")
    version = status_line[:9]
    code = status_line[9:12]
    if (
        version not in ("HTTP/1.1 ", "HTTP/1.0 ")
        or not (code.isascii() and code.isdigit())
        or len(code) != 3
        or status_line[12:13] not in ("", " ")
    ):
        raise Malformed(f"a malformed status line {status_line[:80]!r}")
    fields: dict[str, str] = {}
    if rest:
        lines = rest.count("\r\n")  # no bare CR or LF, no NUL: every line ends in CRLF
        if rest.count("\r") != lines or rest.count("\n") != lines or "\x00" in rest:
            raise Malformed("a bare CR, LF or NUL in the answer's headers")
        for line in rest.split("\r\n"):
            name, colon, value = line.partition(":")
            key = _NAMES.get(name)
            if key is None or not colon:
                if not colon or not name or not set(name) <= TOKEN:  # also folded lines
                    raise Malformed(f"a malformed header line {line[:80]!r}")
                key = name.lower()
                if len(_NAMES) < 1024:
                    _NAMES[name] = key
            value = value.strip(" \t")
            if key in fields:
                if key == "content-length":
                    if fields[key] != value:
                        raise Malformed("two different Content-Length headers")
                    continue
                value = f"{fields[key]}, {value}"
            fields[key] = value
    return int(code), version == "HTTP/1.1 ", Headers(fields)


def framing_of(status: int, method: str, headers: Headers) -> Framing:
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return Framing(chunked=False, length=0)
    coding = dict.get(headers, "transfer-encoding")
    length = dict.get(headers, "content-length")
    if coding is not None:
        if length is not None:
            raise Malformed("both Content-Length and Transfer-Encoding")
        if coding.strip().lower() != "chunked":
            raise Malformed(f"the transfer coding {coding!r} (only chunked is read)")
        return Framing(chunked=True, length=None)
    if length is not None:
        if not (length.isascii() and length.isdigit()) or len(length) > 18:
            raise Malformed(f"a malformed Content-Length {length[:40]!r}")
        return Framing(chunked=False, length=int(length))
    return Framing(chunked=False, length=None)


def keeps_alive(http11: bool, headers: Headers) -> bool:
    connection = dict.get(headers, "connection")
    if connection is None:
        return http11
    tokens = {token.strip().lower() for token in connection.split(",")}
    return "keep-alive" in tokens if not http11 else "close" not in tokens


async def read_answer(
    conn: Connection, request: HttpRequest, max_body: int
) -> tuple[HttpResponse, bool]:
    """The answer on ``conn`` and whether the connection may carry another request."""
    buffer = conn.buffer
    while True:
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            if len(buffer) > HEAD_MAX:
                raise Malformed("an answer head larger than 64 KiB")
            await conn.more()
        if end > HEAD_MAX:
            raise Malformed("an answer head larger than 64 KiB")
        status, http11, headers = parse_head(bytes(buffer[:end]))
        del buffer[: end + 4]
        if status == 101:
            raise Malformed("101 Switching Protocols, though no upgrade was asked for")
        if not 100 <= status < 200:
            break  # interim answers (100 Continue, 103 Early Hints) are skipped
    encoding = dict.get(headers, "content-encoding")
    if encoding is not None and encoding.strip().lower() != "identity":
        raise Malformed(
            f"a compressed answer (Content-Encoding: {encoding[:40]}), though none was asked for"
        )
    framing = framing_of(status, request.method, headers)
    reusable = keeps_alive(http11, headers) and (framing.chunked or framing.length is not None)
    if 200 <= status < 300 and not request.raw_body:
        content_type = media_type(dict.get(headers, "content-type"))
        if content_type == "text/event-stream":
            body = Body(conn, framing, max_body)
            messages = await read_event_stream(body, request)
            response = HttpResponse(
                status=status, headers=headers, messages=messages, is_event_stream=True
            )
            return response, reusable and body.done  # stopped early: the rest is unread
        raw = await whole(conn, framing, max_body)
        return new_response(
            status, headers, decoded_body(raw, content_type, request), b""
        ), reusable
    raw = await whole(conn, framing, max_body)
    if 200 <= status < 300:
        return new_response(status, headers, None, raw), reusable
    raise status_failure(status, raw, request)  # the connection is closed: errors are rare


async def whole(conn: Connection, framing: Framing, max_body: int) -> bytes:
    """A whole body (at most ``max_body`` bytes)."""
    length, buffer = framing.length, conn.buffer
    if length is not None:
        if length > max_body:
            raise too_large(max_body)
        while len(buffer) < length:
            await conn.more()
        raw = bytes(buffer[:length])
        del buffer[:length]
        return raw
    return b"".join([piece async for piece in Body(conn, framing, max_body)])
