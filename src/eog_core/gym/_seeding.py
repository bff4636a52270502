"""Reading a task's seed SQL, seeding within the directory's bound, waiting for seeds in
flight, judging whether a seed may have landed, and discovering the task's tools
(TaskSession's and the Janitor's helpers)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from eog_core.errors import (
    GymHTTPError,
    GymUnreachableError,
    RequestError,
    SeedError,
    SeedFileError,
)
from eog_core.gym._client import GymClient
from eog_core.tasks import GymServer, Task, ToolSet, ToolSnapshot, ToolSpec, merge_tools

if TYPE_CHECKING:
    from eog_core.gym._directory import GymDirectory, Lease

__all__ = [
    "SeedFate",
    "close_after_seed",
    "discover_tools",
    "read_seed",
    "seed_fate",
    "settle",
    "start_seed",
]

SeedFate = Literal["landed", "unknown", "never"]

log = logging.getLogger("eog_core.session")

_CLOSING: set[asyncio.Future[Any]] = set()  # deferred closes, kept alive until done


class _Unsent(SeedError):
    """The start was abandoned while this seed waited for a slot: it was never sent."""


async def settle(seeds: Sequence[asyncio.Future[Any]], limit: float) -> None:
    """Wait (up to ``limit`` seconds) for seed requests still in flight to finish."""
    running = [seed for seed in seeds if not seed.done()]
    if not running:
        return
    _, pending = await asyncio.wait(running, timeout=limit)
    if pending:
        log.warning("cleanup: seeding still running after %.0f s; deleting anyway", limit)


def start_seed(directory: GymDirectory, lease: Lease, client: GymClient, sql: str, *,
               database_id: str, name: str, abandoned: asyncio.Event,
               ) -> tuple[asyncio.Task[str], asyncio.Future[str]]:
    """Seed one database in its own task, once the replica has a free seed slot (never,
    if the start was abandoned while it waited); and a future that reports its outcome.

    Waiting on the report, not the task, lets a cancelled caller leave while the
    request finishes (its fate then decides what cleanup does): what
    ``asyncio.shield`` gives, one event-loop pass sooner.
    """
    report: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(_seed(directory, lease, client, sql, database_id, name,
                                       abandoned, report))
    task.add_done_callback(_seen)
    return task, report


async def _seed(directory: GymDirectory, lease: Lease, client: GymClient, sql: str,
                database_id: str, name: str, abandoned: asyncio.Event,
                report: asyncio.Future[str]) -> str:
    try:
        async with directory.seed_slot(lease):
            if abandoned.is_set():
                raise _Unsent(f"seeding gym {lease.gym!r} was abandoned before it was sent",
                              gym=lease.gym)
            await client.seed_database(sql, database_id=database_id, name=name)
    except BaseException as exc:
        if not report.done():  # the caller may have left (cancelled)
            report.set_exception(exc)
            report.exception()  # retrieved: a caller that left will never read it
        raise
    if not report.done():
        report.set_result(database_id)
    return database_id


def _seen(task: asyncio.Future[Any]) -> None:
    """Mark a seed's failure as retrieved: cleanup reads it (seed_fate), maybe later."""
    if not task.cancelled():
        task.exception()


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
    if isinstance(error, GymUnreachableError | RequestError | _Unsent):
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
            f"seed file for gym {gym.name!r} not found: {path} (upstream's seed files come "
            "from gym_dbs.zip: eog-core seeds unpack gym_dbs.zip --to DIR, then --seed-root DIR)",
            path=str(path), gym=gym.name) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedFileError(
            f"seed file for gym {gym.name!r} unreadable: {path} ({exc})",
            path=str(path),
            gym=gym.name,
        ) from exc


async def discover_tools(
    task: Task, clients: Mapping[str, GymClient], snapshots: Mapping[str, ToolSnapshot] | None
) -> tuple[ToolSet, dict[str, str]]:
    """The task's tool set and every listed tool's owner (snapshots, or one cached listing
    per replica). Both are shared by every session of the task on the same listings:
    treat them as read-only."""
    listed: dict[str, ToolSnapshot | Sequence[ToolSpec]]
    if snapshots is not None:
        listed = {gym: snapshots[gym] for gym in clients if gym in snapshots}
    elif len(clients) == 1:  # usually cached: no task to schedule
        listed = {gym: await client.cached_tool_specs() for gym, client in clients.items()}
    else:
        answers = await asyncio.gather(*(c.cached_tool_specs() for c in clients.values()))
        listed = dict(zip(clients, answers, strict=True))
    key = (id(task), *(id(source) for source in listed.values()))
    known = _DISCOVERED.get(key)
    if known is not None and known[0] is task and all(  # the entry keeps its key's objects alive
            a is b for a, b in zip(known[1], listed.values(), strict=True)):
        return known[2], known[3]
    every = merge_tools(attrs.evolve(task, selected_tools=None, restricted_tools=None), listed)
    owners = {tool.name: tool.gym or "" for tool in every.tools}
    tools = merge_tools(task, listed)
    if len(_DISCOVERED) >= _DISCOVERED_MAX:
        _DISCOVERED.clear()
    _DISCOVERED[key] = (task, tuple(listed.values()), tools, owners)
    return tools, owners


# (task, its gyms' listings) -> its tool set and owners: a task run again on the same
# cached listings (the usual) is not merged again.
_DISCOVERED: dict[tuple[int, ...], tuple[Task, tuple[Any, ...], ToolSet, dict[str, str]]] = {}
_DISCOVERED_MAX = 256
