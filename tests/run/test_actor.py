"""The one Ray actor body (#19): its gyms opened once on the actor's loop and closed with
the leaks reported; the Ray adapter's worker runs on it against a real local gym, no Ray."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from eog_core import load_task
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.integrations.ray import EogWorker
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from eog_core.run import ActorBody
from eog_core.tasks import task_record

PATHS = demo_paths()


async def replay_agent(session: TaskSession) -> str:
    for step in load_demo_trajectory():
        await session.call_tool(step["name"], step["arguments"])
    return "done"


async def test_concurrent_first_calls_share_one_directory_and_janitor() -> None:
    body = ActorBody({"gym-a": "http://127.0.0.1:9"})
    first, second = await asyncio.gather(body.gyms(), body.gyms())
    assert first[0] is second[0] and first[1] is second[1]
    assert isinstance(first[0], GymDirectory) and isinstance(first[1], Janitor)
    assert await body.close() == []
    assert await body.close() == []  # idempotent
    reopened = await body.gyms()
    assert reopened[0] is not first[0]
    await body.close()


class _Refuses(ActorBody):
    entered: list[str]

    async def _enter(self, stack: contextlib.AsyncExitStack) -> None:
        self.entered = ["enter"]
        stack.callback(self.entered.append, "closed")
        raise RuntimeError("model client refused")


async def test_a_failed_setup_releases_what_it_took() -> None:
    body = _Refuses({"gym-a": "http://127.0.0.1:9"})
    with pytest.raises(RuntimeError, match="model client refused"):
        await body.gyms()
    assert body.entered == ["enter", "closed"]
    assert await body.close() == []


async def test_the_ray_worker_runs_rollouts_on_the_body_without_ray() -> None:
    async with LocalGym.demo() as gym:
        worker = EogWorker({gym.name: [gym.url]}, seed_root=str(PATHS.directory))
        record = task_record(load_task(PATHS.task))
        rows = await asyncio.gather(
            worker.rollout(record, replay_agent, repeat=0), worker.rollout(record, None, repeat=1)
        )
        assert [row["reward"] for row in rows] == [1.0, 0.0]
        assert gym.method_counts.get("initialize") == 1  # one directory: one MCP session
        assert await worker.close() == []
        assert gym.database_ids() == []
