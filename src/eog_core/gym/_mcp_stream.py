"""MCP's standalone stream, opt-in: the ``GET`` on which a server sends what belongs to
no request of this client.

A server request made without a related request (FastMCP's ``send_ping()`` in a
tool) goes to this stream. When no client listens the server drops it and waits
for an answer that never comes, so the tool call hangs until ``Timeouts.rpc``.
A session opened with ``listen`` opens the stream after each handshake, as the
official SDK client does, and answers the requests on it the way it answers
those on a response stream (:class:`eog_core.gym._jsonrpc.ServerRequests`);
notifications are read and dropped. A server that offers no stream (``405``,
or an answer that is not an event stream) is not asked again in that session.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import attrs

from eog_core.errors import ClosedError, GymError, GymHTTPError, GymTimeoutError
from eog_core.gym._http import HttpRequest
from eog_core.gym._jsonrpc import ServerRequests, session_gone
from eog_core.gym._transport import Transport

__all__ = ["STREAM_SECONDS", "ServerStream"]

log = logging.getLogger("eog_core.gym")

STREAM_SECONDS = 300.0
"""How long one ``GET`` is held before it is opened again (what it read is let go)."""
_QUIET_ENDS = 3  # a stream ended this often in a row without a message: stop asking
_REOPEN_DELAY = 0.05


@attrs.define(eq=False)
class ServerStream:
    """The standalone stream of one MCP session, read by a task of its own."""

    transport: Transport
    url: str
    gym: str | None
    headers: dict[str, str]
    connect_timeout: float
    answer: ServerRequests
    _task: asyncio.Task[None] | None = attrs.field(default=None, init=False)
    _opened: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    _heard: bool = attrs.field(default=False, init=False)

    async def open(self, time_limit: float) -> None:
        """Start listening; return once the server accepted the stream or refused it
        (at most ``time_limit``): requests sent after this reach a listening client."""
        task = self._task = asyncio.ensure_future(self._listen())
        _LISTENING.add(task)
        task.add_done_callback(_LISTENING.discard)
        opened = asyncio.ensure_future(self._opened.wait())
        try:
            await asyncio.wait(
                [opened, task], timeout=time_limit, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            opened.cancel()

    def close(self) -> None:
        """Stop listening (the ``GET`` is abandoned, its connection closed)."""
        if self._task is not None:
            self._task.cancel()

    @property
    def listening(self) -> bool:
        """The server accepted the stream and it is being read."""
        return self._opened.is_set() and self._task is not None and not self._task.done()

    async def _listen(self) -> None:
        quiet_ends = 0
        while True:
            self._heard = False
            try:
                response = await self.transport.send(self._request())
            except GymTimeoutError:
                continue  # the stream's own time limit: open it again
            except GymHTTPError as exc:
                if exc.status == 405:
                    log.debug("gym %s offers no standalone MCP stream (HTTP 405)", self.gym)
                elif session_gone(exc):
                    log.debug("gym %s: the standalone stream's session is gone", self.gym)
                else:
                    log.info("gym %s: the standalone MCP stream failed: %s", self.gym, exc)
                return
            except (GymError, ClosedError) as exc:  # ClosedError: the pool closed
                log.info("gym %s: the standalone MCP stream failed: %s", self.gym, exc)
                return
            if not response.is_event_stream:
                log.debug("gym %s answered the standalone stream's GET without one", self.gym)
                return
            quiet_ends = 0 if self._heard else quiet_ends + 1
            if quiet_ends >= _QUIET_ENDS:
                log.info(
                    "gym %s ended the standalone MCP stream %d times without a message: "
                    "not listening any more",
                    self.gym,
                    quiet_ends,
                )
                return
            await asyncio.sleep(_REOPEN_DELAY)  # the server ended it: open it again

    def _request(self) -> HttpRequest:
        return HttpRequest(
            method="GET",
            url=self.url,
            headers=self.headers,
            timeout=STREAM_SECONDS,
            connect_timeout=self.connect_timeout,
            idempotent=True,
            gym=self.gym,
            on_message=self._on_message,
            on_open=self._opened.set,
        )

    async def _on_message(self, message: Any) -> None:
        self._heard = True
        await self.answer(message)


_LISTENING: set[asyncio.Task[None]] = set()  # listeners kept alive while they read
