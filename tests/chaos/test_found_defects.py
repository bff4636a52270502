"""Minimal reproductions of what the chaos run found, each against a real LocalGym.

Each test names the defect of docs/reliability.md it reproduces.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from eog_core.errors import GymError, SeedError
from eog_core.gym import GymClient, GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.local import Fault, FaultProxy, LocalGym
from eog_core.tasks import Task, task_from_mapping

from .harness import NOTES, NOTES_SCHEMA, notes_gym


@pytest.fixture
async def notes() -> AsyncIterator[LocalGym]:
    async with notes_gym() as gym:
        yield gym


def notes_task(url: str) -> Task:
    return task_from_mapping(
        {
            "task_id": "one_gym",
            "user_prompt": "Take a note.",
            "verifiers": [],
            "gym_servers_config": [
                {"mcp_server_name": NOTES, "mcp_server_url": url, "seed_database_file": "notes.sql"}
            ],
        }
    )


async def test_d1_a_seed_landing_after_the_client_gave_up_is_deleted(notes: LocalGym) -> None:
    """D1 (issue #8 item 1): the seed times out, its DELETE meets 404, the seed lands later."""
    async with (
        FaultProxy(upstream=notes.url, delay=1.0) as proxy,
        Janitor(base_delay=0.05, max_delay=0.5, interval=0.05, landing_window=30.0) as janitor,
    ):
        proxy.inject(Fault.DELAY, path="/api/seed-database")
        with pytest.raises(SeedError):
            await TaskSession.start(
                notes_task(proxy.url),
                directory=GymDirectory(),
                seed_sql={NOTES: NOTES_SCHEMA},
                janitor=janitor,
                timeouts=Timeouts(seed=0.2),
            )
        async with asyncio.timeout(60):
            await proxy.drain()  # the held seed reaches the gym now
            while janitor.leaked():  # noqa: ASYNC110 - a Janitor has no "drained" event
                await asyncio.sleep(0.05)
        assert notes.ledger.seeds.total() == 1
        assert notes.database_ids() == []


async def test_d2_cancelling_during_the_initialized_notification_ends_the_session(
    notes: LocalGym,
) -> None:
    """D2 (issue #8 item 2): the initialize answer arrived, so the client knows the session
    id; a cancel while ``notifications/initialized`` is on the wire must not orphan it."""
    async with FaultProxy(upstream=notes.url, delay=0.5) as proxy:
        proxy.inject(Fault.DELAY, method="notifications/initialized")
        client = GymClient(proxy.url, name=NOTES, share_mcp=False)
        listing = asyncio.ensure_future(client.list_tools())
        async with asyncio.timeout(30):
            while not proxy.injected:  # noqa: ASYNC110 - wait for the held notification
                await asyncio.sleep(0.01)
        listing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listing
        await client.aclose()
        async with asyncio.timeout(30):
            await proxy.drain()
        assert notes.session_ids() == []


async def test_d2_a_failed_initialized_notification_ends_the_session(notes: LocalGym) -> None:
    """D2: the notification fails (HTTP 500 each time): the session it belonged to is ended."""
    async with FaultProxy(upstream=notes.url) as proxy:
        proxy.inject(Fault.FAIL_BEFORE, count=5, method="notifications/initialized")
        async with GymClient(proxy.url, name=NOTES, share_mcp=False) as client:
            with pytest.raises(GymError):
                await client.list_tools()
        assert notes.session_ids() == []
