"""Fixtures for the gateway: the demo gym, a gateway in front of it, an HTTP client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core import Task, load_task
from eog_core.gateway import Gateway
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


@pytest.fixture
def demo_task() -> Task:
    return load_task(demo_paths().task)


class Records:
    """The records a gateway wrote, with a way to wait for the next one."""

    def __init__(self) -> None:
        self.items: list[Mapping[str, Any]] = []
        self._changed = asyncio.Event()

    def __call__(self, record: Mapping[str, Any]) -> None:
        self.items.append(record)
        self._changed.set()

    async def wait_for(self, count: int) -> list[Mapping[str, Any]]:
        async with asyncio.timeout(10.0):
            while len(self.items) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.items


def make_gateway(
    gym: LocalGym, out: Path, tasks: list[Task] | None = None, **options: Any
) -> Gateway:
    return Gateway(
        tasks or [load_task(demo_paths().task)],
        out,
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=demo_paths().directory,
        **options,
    )


@pytest.fixture
def records() -> Records:
    return Records()


@pytest.fixture
async def gateway(gym: LocalGym, tmp_path: Path, records: Records) -> AsyncIterator[Gateway]:
    async with make_gateway(gym, tmp_path / "out", repeats=2, on_record=records) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
