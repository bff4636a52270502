"""Ending MCP sessions: the ``DELETE`` that ends one on the server (best effort,
every failure logged), and the closes kept alive past a cancelled caller.

Used by :mod:`eog_core.gym._mcp`, which decides what to end and when.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from eog_core.errors import ClosedError, GymError, GymHTTPError
from eog_core.gym._transport import HttpRequest, Transport

__all__ = ["end_session", "keep_until_done", "retrieve"]

log = logging.getLogger("eog_core.gym")

_ENDING: set[asyncio.Future[Any]] = set()  # closes kept alive past a cancelled caller


async def end_session(transport: Transport, request: HttpRequest) -> None:
    """Send the ``DELETE`` ``request`` that ends a session; log what goes wrong."""
    gym = request.gym
    try:
        await transport.send(request)
    except GymHTTPError as exc:
        if exc.status == 405:  # the spec lets a server refuse client-ended sessions
            log.debug("gym %s: the server does not end MCP sessions on DELETE", gym)
        else:
            log.info("gym %s: ending the MCP session failed: %s", gym, exc)
    except (GymError, ClosedError) as exc:  # ClosedError: the pool closed under it
        log.info("gym %s: ending the MCP session failed: %s", gym, exc)


def keep_until_done(future: asyncio.Future[Any]) -> None:
    """Hold ``future`` (a close) until it is done, its failure retrieved: its closer
    may have been cancelled."""
    _ENDING.add(future)
    future.add_done_callback(_ENDING.discard)
    future.add_done_callback(retrieve)


def retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a future's failure as seen: its waiters may all have gone."""
    if not future.cancelled():
        future.exception()
