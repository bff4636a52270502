"""Tool calls through the MCP gateway against direct ``TaskSession.call_tool`` (``nox -s bench``).

The demo gym and the gateway run in their own processes (``gateway_vs_direct.py``
has the paired-rounds version with CPU per call and idle memory, the figures in
docs/performance.md). Each round is ``CALLS`` calls of ``find_account`` at
concurrency 1 or 16 (one rollout per worker); ``extra_info["calls_per_second"]``
holds the rate, the two paths side by side in one group.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eog_core import load_task
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.local import DEMO_SERVER_NAME, demo_paths
from gateway_vs_direct import TOOL, GatewayAgent, spawn_gateway, spawn_gym

CALLS = 320
Call = Callable[[], Awaitable[None]]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    gym, gym_url = spawn_gym()
    with tempfile.TemporaryDirectory() as out:
        gateway, control = spawn_gateway(gym_url, Path(out), repeats=256)
        try:
            yield gym_url, control
        finally:
            for process in (gateway, gym):
                process.terminate()
                process.wait(timeout=30)


async def _open(
    stack: AsyncExitStack, path: str, gym_url: str, control: str, workers: int
) -> list[Call]:
    if path == "gateway":
        http = await stack.enter_async_context(aiohttp.ClientSession())
        agents = [GatewayAgent(http, control) for _ in range(workers)]
        for agent in agents:
            await agent.open()
            stack.push_async_callback(agent.abandon)
        return [agent.call for agent in agents]
    directory = await stack.enter_async_context(GymDirectory({DEMO_SERVER_NAME: gym_url}))
    janitor = await stack.enter_async_context(Janitor())
    task = load_task(demo_paths().task)
    calls: list[Call] = []
    for _ in range(workers):
        session = await stack.enter_async_context(
            TaskSession.start(
                task, directory=directory, seed_root=demo_paths().directory, janitor=janitor
            )
        )

        async def call(session: TaskSession = session) -> None:
            result = await session.call_tool(*TOOL)
            assert not result.is_error, result.text
            session.trajectory.clear()

        calls.append(call)
    return calls


async def _batch(calls: list[Call]) -> None:
    async def worker(call: Call) -> None:
        for _ in range(CALLS // len(calls)):
            await call()

    await asyncio.gather(*(worker(c) for c in calls))


@pytest.mark.parametrize("path", ["direct", "gateway"])
@pytest.mark.parametrize("concurrency", [1, 16])
def test_gateway_tool_calls(
    benchmark: Any, servers: tuple[str, str], path: str, concurrency: int
) -> None:
    gym_url, control = servers
    benchmark.group = f"gateway vs direct: tools/call x{CALLS}, concurrency {concurrency}"
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        calls = runner.run(_open(stack, path, gym_url, control, concurrency))
        try:
            benchmark.pedantic(lambda: runner.run(_batch(calls)), rounds=5, warmup_rounds=1)
        finally:
            runner.run(stack.aclose())
    benchmark.extra_info["calls_per_second"] = round(CALLS / benchmark.stats.stats.mean, 1)
