"""Reading a task's seed SQL, waiting for seeds in flight and judging whether a seed
may have landed (TaskSession's and the Janitor's helpers)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Literal

from eog_core.errors import GymHTTPError, GymUnreachableError, RequestError, SeedFileError
from eog_core.gym._client import GymClient
from eog_core.tasks import GymServer

__all__ = ["SeedFate", "close_after_seed", "read_seed", "seed_fate", "settle"]

SeedFate = Literal["landed", "unknown", "never"]

log = logging.getLogger("eog_core.session")

_CLOSING: set[asyncio.Future[Any]] = set()  # deferred closes, kept alive until done


async def settle(seeding: asyncio.Future[Any], limit: float) -> None:
    """Wait (up to ``limit`` seconds) for seed requests still in flight to finish."""
    if seeding.done():
        return
    done, _ = await asyncio.wait([seeding], timeout=limit)
    if not done:
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
    if isinstance(error, GymUnreachableError | RequestError):
        return "never"  # nothing left this process
    if isinstance(error, GymHTTPError) and 400 <= error.status < 500 and error.status != 408:
        return "never"  # the gym read the request and refused it
    return "unknown"


def read_seed(gym: GymServer, seed_root: Path | None) -> str:
    if not gym.seed_database_file:
        raise SeedFileError(f"gym {gym.name!r} names no seed_database_file", path="", gym=gym.name)
    path = Path(gym.seed_database_file)
    if not path.is_absolute() and seed_root is not None:
        path = seed_root / path
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SeedFileError(
            f"seed file for gym {gym.name!r} not found: {path}", path=str(path), gym=gym.name
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedFileError(
            f"seed file for gym {gym.name!r} unreadable: {path} ({exc})",
            path=str(path),
            gym=gym.name,
        ) from exc
