"""The directory's hooks for planned restarts: drain, wait for a replica's return, reset."""

from __future__ import annotations

import asyncio

import pytest

from eog_core.errors import GymUnreachableError
from eog_core.gym import GymDirectory, Replica

GYM = "sn-csm-server"
URL = "http://127.0.0.1:9"  # never contacted: a single replica in service is leased unprobed
WAIT = 10.0


async def test_a_capped_replica_drains_then_a_waiting_session_gets_it_after_reset() -> None:
    exhausted: asyncio.Queue[Replica] = asyncio.Queue()
    directory = GymDirectory(
        {GYM: URL}, max_lifecycles=2, return_timeout=WAIT, on_exhausted=exhausted.put_nowait
    )
    first = await directory.acquire(GYM)
    second = await directory.acquire(GYM)  # the second lifecycle: now at its cap
    waiting = asyncio.create_task(directory.acquire(GYM))
    await asyncio.sleep(0)
    assert not waiting.done()  # no new lease while the capped replica drains
    directory.release(first)
    assert exhausted.empty()  # one session still in flight
    assert directory.in_flight(GYM, URL) == 1
    directory.release(second)
    replica = await asyncio.wait_for(exhausted.get(), WAIT)
    assert (replica.url, replica.lifecycles, replica.active) == (URL, 2, 0)
    assert not waiting.done()
    directory.reset(GYM, URL)
    lease = await asyncio.wait_for(waiting, WAIT)
    assert lease.url == URL
    assert directory.stats()["gyms"][GYM][0]["lifecycles"] == 1


async def test_drain_stops_new_leases_and_keeps_the_ones_in_flight() -> None:
    directory = GymDirectory({GYM: URL}, return_timeout=WAIT)
    held = await directory.acquire(GYM)
    assert directory.drain(GYM, URL) is True
    assert directory.drain(GYM, "http://elsewhere:1") is False
    waiting = asyncio.create_task(directory.acquire(GYM))
    await asyncio.sleep(0)
    assert not waiting.done()
    assert directory.in_flight(GYM, URL) == 1  # the session in flight keeps its replica
    directory.release(held)
    directory.reset(GYM, URL)
    assert (await asyncio.wait_for(waiting, WAIT)).url == URL


async def test_a_replica_that_never_returns_fails_the_wait_naming_the_gym() -> None:
    directory = GymDirectory({GYM: URL}, return_timeout=0.05)
    directory.drain(GYM, URL)
    with pytest.raises(GymUnreachableError, match=r"sn-csm-server.*returned to service"):
        await directory.acquire(GYM)


async def test_without_return_timeout_a_capped_gym_fails_at_once() -> None:
    directory = GymDirectory({GYM: URL}, max_lifecycles=1)
    directory.release(await directory.acquire(GYM))
    with pytest.raises(GymUnreachableError, match="lifecycle cap"):
        await directory.acquire(GYM)
