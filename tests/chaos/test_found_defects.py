"""Minimal reproductions of what the chaos run found, against a real LocalGym behind a FaultProxy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from eog_core.errors import SeedError
from eog_core.gym import GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.local import Fault, FaultProxy, LocalGym

from .harness import NOTES, NOTES_SCHEMA, chaos_task, notes_gym


@pytest.fixture
async def notes() -> AsyncIterator[LocalGym]:
    async with notes_gym() as gym:
        yield gym


async def test_a_seed_landing_after_the_client_gave_up_is_deleted(notes: LocalGym) -> None:
    """Issue #8 item 1: the seed times out, its DELETE meets 404, the seed lands later."""
    async with FaultProxy(upstream=notes.url, delay=1.0) as proxy, Janitor(
        base_delay=0.05, max_delay=0.5, interval=0.05
    ) as janitor:
        proxy.inject(Fault.DELAY, path="/api/seed-database")
        task = chaos_task(notes.url)
        task = type(task).from_upstream(
            {**task.to_upstream(), "gym_servers_config": [
                {"mcp_server_name": NOTES, "mcp_server_url": proxy.url,
                 "seed_database_file": "notes.sql"}], "selected_tools": ["put_note"],
             "verifiers": []})
        with pytest.raises(SeedError):
            await TaskSession.start(task, directory=GymDirectory(), seed_sql={NOTES: NOTES_SCHEMA},
                                    janitor=janitor, timeouts=Timeouts(seed=0.2))
        async with asyncio.timeout(60):
            await proxy.drain()  # the held seed reaches the gym now
            while janitor.leaked():
                await asyncio.sleep(0.05)
        assert notes.ledger.seeds.total() == 1
        assert notes.database_ids() == []
