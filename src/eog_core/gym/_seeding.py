"""Reading a task's seed SQL and waiting for seeds in flight (TaskSession's helpers)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from eog_core.errors import SeedFileError
from eog_core.tasks import GymServer

__all__ = ["read_seed", "settle"]

log = logging.getLogger("eog_core.session")


async def settle(seeding: asyncio.Future[Any], limit: float) -> None:
    """Wait (up to ``limit`` seconds) for seed requests still in flight to finish."""
    if seeding.done():
        return
    done, _ = await asyncio.wait([seeding], timeout=limit)
    if not done:
        log.warning("cleanup: seeding still running after %.0f s; deleting anyway", limit)


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
