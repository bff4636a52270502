"""Rollouts cancelled, then cancelled again while closing, leave no MCP session on the gym.

Against LocalGym, which reports the MCP sessions it holds, and the FakeGym, which
holds a handshake at a chosen step: closing must end (``DELETE``) every session it
opened however often the closer is cancelled.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from eog_core import Task
from eog_core.gym import GymClient, GymDirectory, Janitor, TaskSession
from eog_core.local import LocalGym, demo_paths

from .conftest import eventually
from .fake_gym import FakeGym, running

PATHS = demo_paths()
FIND = ("find_account", {"name": "Harbor Lane"})


async def rollout(task: Task, gym: LocalGym, janitor: Janitor, *, own: bool) -> None:
    directory = GymDirectory({gym.name: gym.url})  # each rollout's pool closes with it
    try:
        async with TaskSession.start(
            task, directory=directory, seed_root=PATHS.directory, janitor=janitor, own_mcp=own
        ) as session:
            for _ in range(3):
                await session.call_tool(*FIND)
            await asyncio.Event().wait()  # the model thinking: ends only when cancelled
    finally:
        await directory.aclose()  # a second cancel may land here, in the pool's close


async def test_a_pool_close_cancelled_while_it_waits_for_the_handshake_still_ends_it() -> None:
    """The moment the chaos run found, made deterministic (the FakeGym holds the
    ``initialized`` notification): the call is cancelled mid-handshake, then the
    close that waits for that handshake. The session the server opened is still ended."""
    gate = asyncio.Event()
    async with running(FakeGym(initialized_gate=gate)) as fake:
        client = GymClient(fake.url, share_mcp=True)  # its lease is the pool's last
        call = asyncio.ensure_future(client.call_tool("add", {}, database_id="db_1"))
        await eventually(lambda: "notifications/initialized" in fake.methods)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        closing = asyncio.ensure_future(client.aclose())  # the pool ends the shared session
        await asyncio.sleep(0)  # the close has begun: it waits for the handshake
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        gate.set()
        await eventually(lambda: bool(fake.delete_headers))
        (session,) = fake.sessions
        assert [h["mcp-session-id"] for h in fake.delete_headers] == [session]


@pytest.mark.parametrize("own", [False, True], ids=["shared-session", "own-session"])
async def test_sixty_rollouts_cancelled_twice_at_random_leave_no_session(
    demo_gym: LocalGym, demo_task: Task, own: bool
) -> None:
    """The chaos report's run: sequential rollouts, each cancelled at a random moment and
    again while closing (seeded, so a failure repeats)."""
    chooser = random.Random(20)
    janitor = Janitor(base_delay=0.01, max_delay=0.05, interval=0.01)  # deletes interrupted ones
    demo_gym.set_latency(0.002)
    for _ in range(60):
        running = asyncio.ensure_future(rollout(demo_task, demo_gym, janitor, own=own))
        await asyncio.sleep(chooser.uniform(0.0, 0.03))  # a random moment, not a wait
        running.cancel()
        await asyncio.sleep(chooser.uniform(0.0, 0.01))
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    await eventually(
        lambda: (
            not janitor.leaked() and demo_gym.session_ids() == [] and demo_gym.database_ids() == []
        )
    )
    assert await janitor.aclose() == []
