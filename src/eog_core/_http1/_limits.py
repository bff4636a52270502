"""Every limit of the HTTP/1.1 wire layer in one record, the typed error a peer's bytes raise,
and the ``Host`` rule.

The parser (llhttp, through httptools) checks the syntax; what it does not bound, this layer
does, from :class:`Limits`: a head's size and header count, a body's size (decoded and on the
wire, so chunk framing cannot get around it), a chunk line's length, the number of
connections, the deadline to receive a whole head and the idle timeout.
"""

from __future__ import annotations

import attrs

__all__ = ["LOOPBACK_NAMES", "FramingError", "Limits", "host_allowed"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""The names a loopback server answers to (``Host``), with its port."""


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
    max_response_body: int = 64 * 1024 * 1024
    """Bytes of an answer's body (the client side)."""
    max_chunk_line: int = 1024
    """Bytes of a chunk-size line, its extensions included (400 beyond)."""
    max_connections: int = 512
    """Connections a server holds open at once (503 and close beyond)."""
    head_deadline: float = 30.0
    """Seconds a started request (or answer) may take to arrive whole (408)."""
    idle_timeout: float = 75.0
    """Seconds a keep-alive connection may sit idle before it is closed (aiohttp's default)."""
    max_buffered: int = 4 * 1024 * 1024
    """Bytes of requests read ahead of the one being answered; then reading pauses."""

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


def host_allowed(host: str | None, port: int, *, allow_remote: bool) -> bool:
    """Whether a request's ``Host`` value names this loopback server: ``localhost``,
    ``127.0.0.1`` or ``[::1]`` with ``port`` (DNS rebinding sends another name). With
    ``allow_remote`` any non-empty host is accepted."""
    if host is None or not host:
        return False
    if allow_remote:
        return True
    name, colon, given = host.lower().rpartition(":")
    if not colon or name.endswith("["):  # no port (80), or a bare IPv6 address
        name, given = host.lower(), "80"
    return name in LOOPBACK_NAMES and given == str(port)
