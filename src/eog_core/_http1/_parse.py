"""HTTP/1.1 messages read off a byte stream with llhttp (httptools), bounded by
:class:`~eog_core._http1.Limits`: :class:`RequestReader` for a server, and what it shares
with :class:`~eog_core._http1._response.ResponseReader`, a client's.

A reader is fed what the socket gives (:meth:`~_Reader.feed`) and hands out whole messages
in order (:meth:`~_Reader.pop`): a :class:`Message` with its head, its body and, for a
request, the head as soon as it is read (``on_head``, so a server can refuse a request before
its body is buffered). Every byte is scanned once (a head dripped a byte at a time costs
linear time). Whatever llhttp refuses, or a limit stops, raises :class:`FramingError`; what
llhttp lets through and HTTP/1.1 forbids is refused here too: an HTTP version other than 1.0
and 1.1, a request without ``Host`` or with two, a chunk line over ``max_chunk_line``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import httptools

from eog_core._http1._limits import FramingError, Limits, llhttp_error

__all__ = ["Message", "RequestReader"]


class Message:
    """One request or answer: ``method`` and ``target`` (a request's) or ``status`` (an
    answer's), ``version`` (``"1.1"`` or ``"1.0"``), ``headers`` a mapping of lower-cased
    names to values, both as latin-1 text (a repeated name's values joined with ``", "``), ``body`` bytes, and ``keep_alive`` (llhttp's
    reading of ``Connection`` and the version). ``too_large``: a request's ``Content-Length``
    is over the body limit (its body is read and dropped; the caller answers 413).
    ``size``: its bytes on the wire (about). ``note``: the caller's, as it likes."""

    __slots__ = (
        "body",
        "chunked",
        "content_length",
        "headers",
        "keep_alive",
        "method",
        "note",
        "size",
        "status",
        "target",
        "too_large",
        "version",
    )

    def __init__(self) -> None:
        self.method = ""
        self.target = ""
        self.status = 0
        self.version = ""
        self.headers: dict[str, str] = {}
        self.body = b""
        self.keep_alive = True
        self.chunked = False
        self.content_length: int | None = None
        self.too_large = False
        self.size = 0
        self.note: Any = None

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (lower-case), or None."""
        return self.headers.get(name)


_NAMES: dict[bytes, str] = {}
"""Header names as sent -> their lower-cased text (the few a peer sends: a lookup a header
instead of a decode and a ``lower()``); bounded by ``_NAMES_KEPT``."""
_NAMES_KEPT = 1024


def _name(name: bytes) -> str:
    """A header name not in ``_NAMES`` yet: decoded, lower-cased, kept (up to ``_NAMES_KEPT``)."""
    key = name.decode("latin-1").lower()
    if len(_NAMES) < _NAMES_KEPT:
        _NAMES[name] = key
    return key


class _Reader:
    """What the request and response readers share: llhttp's callbacks and the limits."""

    _request = True

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.body_limit = limits.body_limit(request=self._request)
        self.ready: deque[Message] = deque()
        self.ready_bytes = 0  # the wire size of the messages in ``ready``
        self.current: Message | None = None
        self.head_done = False
        self.head_bytes = 0  # bytes fed while the current head was incomplete
        self.wire_bytes = 0  # bytes fed while the current message's body was incomplete
        self.body_size = 0
        self.chunk_left = 0  # bytes of the current chunk's data not fed yet
        self.chunk_line = bytearray()  # the chunked body's line being read (a size, a trailer)
        self.sized = False  # llhttp read a chunk's size line in the last call
        self.trailers = False  # the last chunk is read: what is left is trailers
        self.pieces: list[bytes] = []
        self.url: list[bytes] = []
        self.tail = b""  # the last bytes read while a head was incomplete (its end may span)
        self.held = bytearray()  # a head's last line, not whole yet (llhttp is fed whole lines)
        self.drop_body = False
        self.finished = False  # a message without keep-alive (or an upgrade) was read: stop
        self.failed: FramingError | None = None
        self.parser: Any = None
        self.max_head = limits.max_head
        self.max_headers = limits.max_headers
        self.fields: dict[str, str] = {}  # the current message's headers
        self.begun = 0  # messages begun so far (a caller notes when one starts)
        self.room = limits.max_headers  # max_headers less the lines not in ``fields``
        self.two_hosts = False  # the current head has two Host lines

    # -- feeding -----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Parse ``data``; whole messages go to :meth:`pop`. Raises FramingError (for good:
        every later call raises it again). Bytes after a message that ends the connection
        (``Connection: close``, HTTP/1.0, an upgrade) are ignored."""
        if self.failed is not None:
            raise self.failed
        try:
            while data and not self.finished:
                size = len(data)
                data = self._feed_some(data)
                if len(data) >= size:  # a turn that reads nothing would never end: refuse
                    raise FramingError(400, "bad request: the framing does not advance")
        except FramingError as error:
            self.failed = error
            raise
        except httptools.HttpParserUpgrade:  # answered as an ordinary request, then closed
            self._finish()
        except httptools.HttpParserCallbackError as error:
            context = error.__context__
            if not isinstance(context, FramingError):
                raise  # a bug of ours, not the peer's bytes
            self.failed = context
            raise context from None
        except httptools.HttpParserError as error:
            if self.finished:  # "Data after `Connection: close`": ignored
                return
            self.failed = llhttp_error(str(error), request=self._request)
            raise self.failed from None

    def _finish(self) -> None:
        self.finished = True
        if self.ready:
            self.ready[-1].keep_alive = False

    def _feed_some(self, data: bytes) -> bytes:
        """Feed ``data`` up to the end of a head or a body (what follows is fed on its own
        turn, a chunked body in slices); the bytes not fed yet."""
        current = self.current
        if current is not None and self.head_done:
            return self._feed_body(current, data)
        tail = self.tail
        end = (tail + data[:3]).find(b"\r\n\r\n") if tail else -1
        if end < 0:
            end = data.find(b"\r\n\r\n")
            cut = -1 if end < 0 else end + 4
        else:
            cut = end + 4 - len(tail)
        held = self.held
        if cut < 0:  # the head goes on: feed whole lines only (llhttp's caller joins the
            line_end = data.rfind(b"\n") + 1  # pieces of a line by copying: quadratic)
            held += data[:line_end] if line_end else data
            piece = b""
            if line_end:
                piece = bytes(held)
                held.clear()
                held += data[line_end:]
            rest = b""
            self.tail = (tail + data[-3:])[-3:]
        else:
            if held:
                piece = bytes(held) + data[:cut]
                held.clear()
            else:
                piece = data[:cut]
            rest = data[cut:]
            self.tail = b""
        self.head_bytes += len(data) - len(rest)
        if self.head_bytes > self.max_head:
            raise FramingError(431, "the head is too large", limit="max_head")
        if piece:
            if self.current is None and self._request:  # a request line: our own rules
                first = piece[0]
                if first == 13 or first == 10:  # CR, LF: llhttp skips them, h11 refuses
                    raise FramingError(400, "bad request: an empty line before the request line")
                if piece.count(b" ", 0, piece.find(b"\n")) != 2:  # llhttp takes "GET  / ..."
                    raise FramingError(400, "bad request: a malformed request line (its spaces)")
            self.parser.feed_data(piece)
            if cut >= 0:
                current = self.current
                if current is not None and self.head_done and self._bodiless(current):
                    return rest
                if current is None or not self.head_done:
                    self.tail = (self.tail + piece[-3:])[-3:]
                elif rest and not current.chunked and current.content_length is not None:
                    left = current.content_length  # most bodies: fed now, saving a turn
                    body, rest = rest[:left], rest[left:]
                    self.wire_bytes = len(body)
                    self.parser.feed_data(body)
        return rest

    def _feed_body(self, current: Message, data: bytes) -> bytes:
        if current.chunked:
            return self._feed_chunked(data)
        if current.content_length is None:  # an answer delimited by the close
            piece, rest = data, b""
        else:
            left = current.content_length - self.wire_bytes
            piece, rest = data[:left], data[left:]
        self.wire_bytes += len(piece)
        self.parser.feed_data(piece)
        return rest

    def _feed_chunked(self, data: bytes) -> bytes:
        """Feed a chunked body exactly up to its end; the bytes after it (the next message's,
        fed on their own turn, through the head's rules). Each chunk's data goes in one call;
        every other line (a size line, the CRLF after data, a trailer) goes in a call of its
        own, so the body can only end where a call ends, and a chunk's size is read from the
        line llhttp has just accepted as one. A line over ``max_chunk_line`` (a trailer
        line: ``max_head``) is refused before llhttp sees it whole, a chunk over what the
        body limit leaves before its data is read."""
        message, line = self.current, self.chunk_line
        at, end = 0, len(data)
        while at < end:
            limit = self.limits.max_head if self.trailers else self.limits.max_chunk_line
            left = self.chunk_left
            if left:  # chunk data, its length known
                piece = data[at : at + left]
                self.chunk_left = left - len(piece)
            else:  # a line
                stop = data.find(b"\n", at, at + limit + 1 - len(line)) + 1 or end
                piece = data[at:stop]
                line += piece
                if len(line) > limit:
                    if self.trailers:
                        raise FramingError(431, "the trailers are too large", limit="max_head")
                    raise FramingError(
                        400, "bad request: a chunk line is too long", limit="max_chunk_line"
                    )
            at += len(piece)
            self._count_wire(len(piece))
            self.sized = False
            self.parser.feed_data(piece)
            if self.current is not message:  # the body ended with this line
                return data[at:]
            if not left and line.endswith(b"\n"):
                if self.sized:  # the line announced a chunk: its size, in hex
                    self._chunk(line)
                line.clear()
        return b""

    def _chunk(self, line: bytearray) -> None:
        try:
            size = int(bytes(line).partition(b";")[0].strip(b" \t\r\n"), 16)
        except ValueError:
            raise FramingError(400, "bad request: a malformed chunk size") from None
        if not self.drop_body and self.body_size + size > self.body_limit:
            raise FramingError(
                413, f"the body is over {self.body_limit} bytes", limit=self._body_field()
            )
        self.chunk_left = size
        self.trailers = size == 0  # the last chunk: trailer lines (or the blank line) follow

    def _count_wire(self, size: int) -> None:
        self.wire_bytes += size
        if self.wire_bytes > 2 * self.body_limit + self.limits.max_head:
            raise FramingError(
                413,
                f"the body is over {self.body_limit} bytes (with its framing)",
                limit=self._body_field(),
            )

    def _body_field(self) -> str:
        return "max_request_body" if self._request else "max_response_body"

    def _bodiless(self, current: Message) -> bool:
        """Whether ``current``, its head just read, ends here though its head announces a
        body (the side's rule: an answer to HEAD)."""
        return False

    def take_body(self) -> bytes:
        """The body bytes read so far of the message whose head is read (:attr:`head_only`),
        and not taken yet: for a caller reading a body as it arrives (an event stream); what
        is left comes with the message from :meth:`pop`. The body limit counts the whole."""
        pieces = self.pieces
        if not pieces or self.current is None:
            return b""
        self.pieces = []
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def pop(self) -> Message | None:
        """The next whole message, or None."""
        if not self.ready:
            return None
        message = self.ready.popleft()
        self.ready_bytes -= message.size
        return message

    @property
    def mid_message(self) -> bool:
        """Whether a message has started (a byte of it read) and is not whole yet."""
        return self.current is not None or bool(self.held)

    @property
    def head_only(self) -> Message | None:
        """The message whose head is read and whose body is still to come, if any."""
        return self.current if self.head_done else None

    # -- llhttp's callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.begun += 1
        self.current = current = Message()
        self.fields = current.headers
        self.room = self.max_headers
        self.two_hosts = False
        self.head_done = self.drop_body = False
        self.wire_bytes = self.body_size = self.chunk_left = 0
        self.chunk_line.clear()
        self.trailers = False
        self.pieces = []
        self.url = []

    def on_url(self, url: bytes) -> None:
        self.url.append(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        fields = self.fields
        key = _NAMES.get(name) or _name(name)
        # the usual header: a new name, with room for its line
        if key in fields or self.head_done or len(fields) >= self.room:
            self._other_header(key, value)
        else:
            fields[key] = value.decode("latin-1")

    def _other_header(self, key: str, value: bytes) -> None:
        """A repeated name (joined), a trailer (counted, not kept), or a line over
        ``max_headers`` (431). The lines read are ``len(fields)`` plus those not in it: each
        of those takes one from ``room``."""
        fields = self.fields
        if self.head_done or key in fields:
            self.room -= 1
            over = len(fields) > self.room
        else:
            over = len(fields) >= self.room
        if over:
            raise FramingError(
                431,
                f"more than {self.limits.max_headers} {'request ' if self._request else ''}headers",
                limit="max_headers",
            )
        if self.head_done:
            return
        if key in fields:
            self.two_hosts = self.two_hosts or key == "host"
            fields[key] = f"{fields[key]}, {value.decode('latin-1')}"
        else:
            fields[key] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        current = self.current
        assert current is not None
        parser = self.parser
        current.version = parser.get_http_version()
        if current.version not in ("1.1", "1.0"):
            raise FramingError(505, f"HTTP version not supported: {current.version[:20]}")
        current.keep_alive = parser.should_keep_alive()
        length = current.headers.get("content-length")
        current.content_length = None if length is None else int(length)
        coding = current.headers.get("transfer-encoding")
        current.chunked = coding is not None
        if coding is not None and coding.strip().lower() != "chunked":
            raise FramingError(501, f"transfer coding not supported: {coding[:40]}")
        if (current.content_length or 0) > self.body_limit:
            if not self._request or current.content_length > self.limits.max_skipped_body:  # type: ignore[operator]
                raise FramingError(
                    413, f"the body is over {self.body_limit} bytes", limit=self._body_field()
                )
            current.too_large = self.drop_body = True
        self._head(current)
        self.head_done = True

    def _head(self, current: Message) -> None:
        """A head is read: the side's own checks."""

    def on_chunk_header(self) -> None:
        self.sized = True

    def on_body(self, body: bytes) -> None:
        if self.drop_body:
            return
        self.body_size += len(body)
        if self.body_size > self.body_limit:
            raise FramingError(
                413, f"the body is over {self.body_limit} bytes", limit=self._body_field()
            )
        self.pieces.append(body)

    def on_message_complete(self) -> None:
        current = self.current
        assert current is not None
        current.body = b"".join(self.pieces)
        current.size = self.head_bytes + self.wire_bytes
        self.pieces = []
        self.current = None
        self.head_bytes = self.wire_bytes = 0
        self.ready.append(current)
        self.ready_bytes += current.size
        if not current.keep_alive:
            self.finished = True


class RequestReader(_Reader):
    """A server's reader of requests. ``on_head(message)`` runs once a request's head is read
    (its body still to come); it returns True to have the body read and dropped instead of
    kept (a refused request). ``Host`` must be present once."""

    def __init__(self, limits: Limits, on_head: Callable[[Message], bool] | None = None) -> None:
        super().__init__(limits)
        self.on_head = on_head
        self.parser = httptools.HttpRequestParser(self)

    def _head(self, current: Message) -> None:
        current.method = self.parser.get_method().decode("ascii")
        current.target = b"".join(self.url).decode("latin-1")
        if self.two_hosts or (current.version == "1.1" and "host" not in current.headers):
            raise FramingError(400, "bad request: a request needs exactly one Host header")
        if self.on_head is not None and self.on_head(current):
            self.drop_body = True
