"""What closing a task session undoes, step by step (TaskSession's cleanup).

Set-up registers each thing as soon as it exists (a replica lease right after
``acquire``, a gym's client, database and seed request before the first await
that follows them), so a start that fails or is cancelled half-way undoes
exactly what it did, and a closing session undoes all of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import attrs

from eog_core.errors import GymError, GymHTTPError
from eog_core.gym._client import GymClient
from eog_core.gym._seed_fate import close_after_seed, seed_fate, settle

if TYPE_CHECKING:
    from eog_core.gym._directory import GymDirectory
    from eog_core.gym._janitor import Janitor
    from eog_core.gym._replica import Lease

__all__ = ["Teardown", "delete_or_adopt"]

log = logging.getLogger("eog_core.session")


@attrs.define(eq=False)
class GymState:
    """One gym of a session: its replica, client, database and seed request."""

    lease: Lease
    client: GymClient
    database_id: str
    seed: asyncio.Future[Any]


@attrs.define(eq=False)
class Teardown:
    """Undoes a session's set-up, in this order:

    1. seeds still waiting for a slot are abandoned (never sent);
    2. seeds on the wire get ``admin_timeout`` seconds to land;
    3. gym by gym, last first: its database is deleted (or handed to the janitor,
       see :func:`delete_or_adopt`), unless the gym is in ``keep`` (handed off),
       then its client is closed;
    4. the replicas are released to the directory, last first.

    A step that fails is logged and the others still run; a cancellation (or
    another ``BaseException``) is raised once every step ran.
    """

    janitor: Janitor
    admin_timeout: float
    directory: GymDirectory | None = None
    keep: set[str] = attrs.field(factory=set)
    """Gyms whose database closing must not delete (handed off by ``detach``)."""
    leases: list[Lease] = attrs.field(factory=list)
    gyms: list[GymState] = attrs.field(factory=list)
    seeds: list[asyncio.Future[Any]] = attrs.field(factory=list)
    """The seed requests (each its own task)."""
    abandoned: asyncio.Event = attrs.field(factory=asyncio.Event)
    """Set on the way out: seeds that have not been sent yet never are."""

    async def run(self) -> None:
        self.abandoned.set()
        interrupted: BaseException | None = None
        if any(not seed.done() for seed in self.seeds):
            interrupted = await _step(
                ("waiting for seeds in flight", ""), settle(self.seeds, self.admin_timeout)
            )
        for gym in reversed(self.gyms):
            name = gym.lease.gym
            if name not in self.keep:
                interrupted = (
                    await _step(
                        ("deleting the database of ", name),
                        delete_or_adopt(
                            gym.client, gym.lease, gym.database_id, self.janitor, gym.seed
                        ),
                    )
                    or interrupted
                )
            interrupted = (
                await _step(("closing client of ", name), close_after_seed(gym.client, gym.seed))
                or interrupted
            )
        if self.directory is not None:
            for lease in reversed(self.leases):
                try:
                    self.directory.release(lease)
                except BaseException as exc:
                    interrupted = interrupted or exc
        if interrupted is not None:
            raise interrupted


async def _step(what: tuple[str, str], step: Awaitable[None]) -> BaseException | None:
    """Run one step: a failure is logged, a cancellation returned for raising later
    (``what`` names the step in two parts, joined only for the log)."""
    try:
        await step
    except Exception:  # cleanup carries on whatever one step raised
        log.exception("cleanup: %s%s failed", *what)
    except BaseException as exc:
        return exc
    return None


async def delete_or_adopt(
    client: GymClient, lease: Lease, database_id: str, janitor: Janitor, seed: asyncio.Future[Any]
) -> None:
    """Delete a session's database, or hand it to the janitor when that cannot be done
    now (its seed still in flight, a failed or interrupted delete, a seed whose fate is
    unknown that may still land)."""
    fate = seed_fate(seed)
    if fate == "never":  # the seed provably created nothing
        return

    def adopt(error: str, after: asyncio.Future[Any] | None = None) -> None:
        janitor.adopt(
            gym=lease.gym,
            url=lease.url,
            database_id=database_id,
            auth=client.auth,
            may_still_land=fate == "unknown",
            error=error,
            after=after,
        )

    if not seed.done():  # deleting now could precede the seed: the janitor waits for it
        adopt("seed still in flight", after=seed)
        return
    try:
        # A seed the client gave up on may still be loading: 404 is "not yet", not "gone".
        await client.delete_database(database_id, missing_ok=fate == "landed")
    except GymHTTPError as exc:
        adopt(f"its seed may still land: {exc}" if exc.status == 404 else str(exc))
    except GymError as exc:
        adopt(str(exc))
    except BaseException:  # cancelled mid-delete: the janitor finishes the job
        adopt("deletion interrupted")
        raise
