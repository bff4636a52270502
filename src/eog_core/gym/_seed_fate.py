"""Whether a task's seed request created its database, waiting for seeds in flight, and
closing a client only once its seed has left the wire (what cleanup needs to know)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Literal

from eog_core.errors import GymHTTPError, GymUnreachableError, RequestError, SeedError
from eog_core.gym._client import GymClient

__all__ = ["SeedFate", "Unsent", "close_after_seed", "seed_fate", "settle"]

SeedFate = Literal["landed", "unknown", "never"]

log = logging.getLogger("eog_core.session")

_CLOSING: set[asyncio.Future[Any]] = set()  # deferred closes, kept alive until done


class Unsent(SeedError):
    """The start was abandoned while this seed waited for a slot: it was never sent."""


async def settle(seeds: Sequence[asyncio.Future[Any]], limit: float) -> None:
    """Wait (up to ``limit`` seconds) for seed requests still in flight to finish."""
    running = [seed for seed in seeds if not seed.done()]
    if not running:
        return
    _, pending = await asyncio.wait(running, timeout=limit)
    if pending:
        log.warning("cleanup: seeding still running after %.0f s; deleting anyway", limit)


async def close_after_seed(client: GymClient, seed: asyncio.Future[Any]) -> None:
    """Close ``client`` now, or once ``seed`` ended if it is still on the wire.

    Closing would cut the seed's connection, and a cut seed may still land on
    a gym that already read it: letting it finish gives a definite outcome the
    janitor can act on at once.
    """
    if seed.done():
        await client.aclose()
        return

    async def close_later() -> None:
        await asyncio.wait([seed])
        await client.aclose()

    later = asyncio.ensure_future(close_later())
    _CLOSING.add(later)
    later.add_done_callback(_CLOSING.discard)


def seed_fate(seed: asyncio.Future[Any]) -> SeedFate:
    """Whether a seed request created its database: ``"unknown"`` while it may still land.

    A seed that timed out, lost its connection, was cancelled or met a 5xx
    (a proxy's 504, a gym failing mid-load) may have reached the gym, which
    can still be loading the dump; one refused before sending, or answered a
    4xx by the gym itself, never created anything.
    """
    if not seed.done() or seed.cancelled():
        return "unknown"
    error = seed.exception()
    if error is None:
        return "landed"
    if isinstance(error, GymUnreachableError | RequestError | Unsent):
        return "never"  # nothing left this process
    if isinstance(error, GymHTTPError) and 400 <= error.status < 500 and error.status != 408:
        return "never"  # the gym read the request and refused it
    return "unknown"
