"""One keep-alive connection of :class:`~eog_core.gym.LeanTransport` as an asyncio
protocol: what arrives waits in its buffer until the answer's reader takes it, and
a reader waiting for more wakes to :class:`Lost` when the connection ends or its
attempt's time is up.
"""

from __future__ import annotations

import asyncio

__all__ = ["Connection", "Lost", "Malformed"]


class Lost(Exception):
    """Internal: the connection ended (or timed out) before the answer was whole."""


class Malformed(Exception):
    """Internal: the answer breaks HTTP/1.1 framing; the message says how."""


class Connection(asyncio.Protocol):
    """One keep-alive connection: what arrived waits in ``buffer`` until read."""

    __slots__ = (
        "buffer",
        "dropped",
        "ended",
        "error",
        "expired",
        "idle_since",
        "transport",
        "waiter",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.expired = False
        self.dropped = False
        self.error: BaseException | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self.transport = None
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
        transport = self.transport
        return transport is not None and not self.ended and not transport.is_closing()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def more(self) -> None:
        """Wait for more bytes; :class:`Lost` when the connection ended or timed out."""
        if self.expired or self.ended:
            raise Lost("timed out" if self.expired else self._why())
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self.waiter = None
        if self.expired:
            raise Lost("timed out")

    def _why(self) -> str:
        return f"{self.error!r}" if self.error is not None else "the gym closed the connection"
