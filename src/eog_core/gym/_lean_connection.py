"""One keep-alive connection of :class:`~eog_core.gym.LeanTransport` as an asyncio
protocol: what arrives is read at once by the connection's
:class:`~eog_core._http1.ResponseReader` (llhttp, bounded by the transport's
:class:`~eog_core._http1.Limits`), and a reader of the answer waiting for more wakes to
:class:`Lost` when the connection ends or its attempt's time is up, or to
:class:`Malformed` when the bytes break HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
from typing import cast

from eog_core._http1 import FramingError, Limits, ResponseReader

__all__ = ["Connection", "Lost", "Malformed"]


_poll = getattr(select, "poll", None)  # select.select elsewhere (its fds are bounded)


class Lost(Exception):
    """Internal: the connection ended (or timed out) before the answer was whole."""


class Malformed(Exception):
    """Internal: the answer breaks HTTP/1.1 framing (or a bound); the message says how."""


def malformed(error: FramingError) -> Malformed:
    """The framing layer's error in a client's words (its texts are a server's)."""
    if error.limit == "max_response_body":
        return Malformed(f"{error.message} (the transport's max_body)")
    if error.limit == "max_head":
        return Malformed("an answer head larger than 64 KiB")
    return Malformed(error.message.removeprefix("bad request: "))


class Connection(asyncio.Protocol):
    """One keep-alive connection: what arrives is parsed into ``reader`` as it comes."""

    __slots__ = (
        "dropped",
        "ended",
        "error",
        "expired",
        "failure",
        "fd",
        "idle_since",
        "poller",
        "reader",
        "transport",
        "waiter",
    )

    def __init__(self, limits: Limits) -> None:
        self.transport: asyncio.Transport | None = None
        self.reader = ResponseReader(limits)
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.expired = False
        self.dropped = False
        self.error: BaseException | None = None
        self.failure: Malformed | None = None
        self.idle_since = 0.0
        self.fd = -1
        self.poller: select.poll | None = None  # registered once: stale() is one poll(2)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though not always an asyncio.Transport instance (uvloop's)
        self.transport = transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        self.fd = -1 if sock is None else sock.fileno()
        if self.fd >= 0 and _poll is not None:
            self.poller = _poll()
            self.poller.register(self.fd, select.POLLIN)

    def data_received(self, data: bytes) -> None:
        if self.failure is None:
            try:
                self.reader.feed(data)
            except FramingError as error:
                self.failure = malformed(error)
        self._wake()

    def eof_received(self) -> bool:
        self._end()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.error = exc
        if exc is None:
            self._end()
        self.ended = True
        self.transport = None
        self._wake()

    def _end(self) -> None:
        """The gym closed: an answer delimited by the close is whole now."""
        if not self.ended and not self.dropped and self.failure is None:
            with contextlib.suppress(FramingError):  # cut short: the reader sees it lost
                self.reader.eof()
        self.ended = True
        self._wake()

    def expire(self) -> None:
        """The attempt's time is up: whoever waits wakes to :class:`Lost`; the
        connection closes (an answer half read cannot be reused)."""
        self.expired = True
        self.close()

    def close(self) -> None:
        """Drop the connection from our side; a reader waiting on it wakes to :class:`Lost`
        (at once: a TLS connection's ``connection_lost`` may come only after its shutdown)."""
        transport = self.transport
        if transport is not None:
            self.transport = None
            self.ended = self.dropped = True
            transport.close()
            self._wake()

    def usable(self) -> bool:
        """Open, and nothing arrived unasked (an idle connection's reader is empty)."""
        transport = self.transport
        reader = self.reader
        return (
            transport is not None
            and not self.ended
            and not transport.is_closing()
            and self.failure is None
            and not reader.ready
            and not reader.mid_message
            and not reader.finished
        )

    def stale(self) -> bool:
        """Whether the idle connection has something to read: the gym's close (or bytes it
        was not asked for) arrived and the event loop has not run its callback yet. A
        request written on it would be lost (a ``tools/call`` is never re-sent); checked
        with a zero-timeout poll of the socket before the connection is reused."""
        fd = self.fd
        if fd < 0:
            return False
        try:
            if self.poller is None:
                return bool(select.select([fd], [], [], 0)[0])
            return bool(self.poller.poll(0))  # (a closed fd answers POLLNVAL: stale)
        except (OSError, ValueError):
            return True

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def more(self) -> None:
        """Wait for more of the answer: :class:`Malformed` when what arrived breaks HTTP/1.1,
        :class:`Lost` when the connection ended or timed out."""
        if self.failure is not None:
            raise self.failure
        if self.expired or self.ended:
            raise Lost("timed out" if self.expired else self._why())
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self.waiter = None
        if self.expired:
            raise Lost("timed out")
        if self.failure is not None:
            raise self.failure

    def _why(self) -> str:
        return f"{self.error!r}" if self.error is not None else "the gym closed the connection"
