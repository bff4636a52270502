"""Every limit of the HTTP/1.1 wire layer in one record, the typed error a peer's bytes raise,
and the ``Host`` rule.

The parser (llhttp, through httptools) checks the syntax; what it does not bound, this layer
does, from :class:`Limits`: a head's size and header count, a body's size (decoded and on the
wire, so chunk framing cannot get around it), a chunk line's length, the number of
connections, the deadline to receive a whole head and the idle timeout.
"""

from __future__ import annotations

import ipaddress

import attrs

__all__ = ["FramingError", "Limits", "host_allowed", "is_loopback", "llhttp_error"]


@attrs.frozen(kw_only=True)
class Limits:
    """What one side of an HTTP/1.1 connection accepts from its peer.

    ``max_request_body`` bounds a request's body (the server side), ``max_response_body`` an
    answer's (the client side); a chunked body's framing may add at most the body limit again
    on the wire (a 1 MiB limit holds at most 2 MiB of chunk lines and extensions)."""

    max_head: int = 64 * 1024
    """Bytes of a head: request or status line, headers, trailers (431 beyond)."""
    max_headers: int = 100
    """Header lines of a head, trailers counted (431 beyond)."""
    max_request_body: int = 1024 * 1024
    """Bytes of a request's body (413 beyond)."""
    max_response_body: int = 256 * 1024 * 1024
    """Bytes of an answer's body (the client side: a big SQL result fits; one streaming gym
    grew an unbounded reader to 295 MiB, issue 29). ``LeanTransport(max_body=)`` sets it."""
    max_chunk_line: int = 1024
    """Bytes of a chunk-size line, its extensions included (400 beyond)."""
    max_connections: int = 512
    """Connections a server holds open at once (503 and close beyond)."""
    head_deadline: float = 30.0
    """Seconds a started request's head may take to arrive whole (then the connection is
    closed)."""
    idle_timeout: float = 75.0
    """Seconds a keep-alive connection may sit idle before it is closed (aiohttp's default)."""
    max_buffered: int = 4 * 1024 * 1024
    """Bytes of requests read ahead of the one being answered; then reading pauses (and
    whenever the peer does not read its answers)."""
    linger: float = 2.0
    """Seconds a server that closes a connection mid-request (after refusing it) keeps
    reading and dropping what the peer still sends (up to ``max_skipped_body`` bytes), so
    the peer reads the answer instead of a reset."""
    max_skipped_body: int = 64 * 1024 * 1024
    """A request refused before its body (413, 401) whose ``Content-Length`` is at most this
    has its body read and dropped, keeping the connection; a larger one closes it."""

    def body_limit(self, *, request: bool) -> int:
        return self.max_request_body if request else self.max_response_body


class FramingError(Exception):
    """The peer's bytes are not a message this layer accepts: ``status`` is the answer a
    server gives (400, 408, 413, 431, 501, 505), ``limit`` the :class:`Limits` field exceeded
    (None for a syntax error), ``message`` one line naming what was wrong. The connection
    cannot be read further: close it after answering."""

    def __init__(self, status: int, message: str, *, limit: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.limit = limit


_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(name: str) -> bool:
    """Whether a host name or address (no port; an IPv6 address with or without its
    brackets) is this machine's loopback: ``localhost``, ``127.0.0.0/8``, ``::1``."""
    name = name.lower().removeprefix("[").removesuffix("]")
    if name in _LOOPBACK_HOSTS:  # (ipaddress costs tens of thousands of instructions)
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(host: str | None, *, allow_remote: bool) -> bool:
    """Whether a request's ``Host`` value names a loopback server: ``localhost`` or a
    loopback address (``127.0.0.1``, ``[::1]``), with any port or none (DNS rebinding sends
    another name). With ``allow_remote`` any host is accepted; None (an HTTP/1.0 request
    without one) is accepted too: no browser sends it."""
    if host is None or allow_remote:
        return True
    name = host.lower()
    if name.startswith("["):  # [v6] or [v6]:port
        name, bracket, _ = name[1:].partition("]")
        if not bracket:
            return False
    else:
        name = name.partition(":")[0]
    return is_loopback(name)


_LLHTTP_WORDS = (
    (
        "Content-Length can't be present with Transfer-Encoding",
        400,
        "both Content-Length and Transfer-Encoding",
    ),
    (
        "Transfer-Encoding can't be present with Content-Length",  # llhttp's words in answers
        400,
        "both Content-Length and Transfer-Encoding",
    ),
    ("CONNECT/Upgrade", 400, "an upgrade (101 Switching Protocols) that was not asked for"),
    ("Duplicate Content-Length", 400, "two different content-length headers (or two alike)"),
    ("Content-Length", 400, "a malformed Content-Length"),
    ("Transfer-Encoding", 400, "a malformed Transfer-Encoding"),
    ("whitespace after header value", 400, "a malformed header line (folded)"),
    ("after header value", 400, "a bare CR, LF or NUL in the head"),
    ("header value char", 400, "a bare CR, LF or NUL (or another control character) in the head"),
    ("header token", 400, "a malformed header line (a name not a token, or no colon)"),
    ("url", 400, "a malformed request target (not a path)"),
    ("chunk size", 400, "a malformed chunk size"),
    ("chunk extension", 400, "a malformed chunk extension"),
    ("after chunk data", 400, "a chunk without its CRLF"),
    ("HTTP version", 505, "HTTP version not supported"),
)
"""llhttp's error texts (a fragment each, in the order tried) to the words this layer
answers with: one phrase per kind of mistake, whatever llhttp's wording."""


def llhttp_error(text: str, *, request: bool) -> FramingError:
    """The FramingError for llhttp's error ``text``."""
    for fragment, status, words in _LLHTTP_WORDS:
        if fragment in text:
            return FramingError(status, f"bad request: {words}" if status == 400 else words)
    line = "request line" if request else "status line"
    if any(word in text for word in ("method", "version", "status", "CRLF", "Expected")):
        return FramingError(400, f"bad request: a malformed {line} ({text})")
    return FramingError(400, f"bad request: malformed HTTP/1.1 ({text})")
