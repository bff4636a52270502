"""Bounded seeding per replica, re-probing gyms without /health, per-tool latencies."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from eog_core import Task, load_task
from eog_core.errors import GymUnreachableError, UsageError
from eog_core.gym import GymDirectory, Lease, TaskSession
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory

from .conftest import UvicornThread, free_port
from .fake_gym import FakeGym, running

PATHS = demo_paths()


@pytest.fixture
def task() -> Task:
    return load_task(PATHS.task)


async def eventually(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Wait until ``condition`` holds (the counters offer no event to wait on)."""
    async with asyncio.timeout(limit):
        while not condition():  # noqa: ASYNC110 - bounded by the timeout above
            await asyncio.sleep(0.005)


def replica_stats(directory: GymDirectory, gym: str) -> dict[str, Any]:
    (replica,) = directory.stats()["gyms"][gym]
    stats: dict[str, Any] = replica
    return stats


async def test_seeds_are_bounded_per_replica_and_shown_in_the_stats(task: Task) -> None:
    gym = task.gym_servers[0].name
    release = asyncio.Event()
    async with running(FakeGym(seed_release=release)) as fake:
        directory = GymDirectory({gym: fake.url}, max_concurrent_seeds=2)
        starts = [
            asyncio.ensure_future(TaskSession.start(task, directory=directory, seed_sql={gym: "-"}))
            for _ in range(5)
        ]
        await eventually(
            lambda: (
                replica_stats(directory, gym)["seeds_waiting"] == 3 and fake.seeds_in_flight == 2
            )
        )
        assert directory.stats()["max_concurrent_seeds"] == 2
        assert replica_stats(directory, gym)["seeding"] == 2
        release.set()
        sessions = await asyncio.gather(*starts)
        assert fake.max_seeds_in_flight == 2 and fake.seeds_received == 5
        stats = replica_stats(directory, gym)
        assert (stats["seeding"], stats["seeds_waiting"], stats["active"]) == (0, 0, 5)
        for session in sessions:
            await session.aclose()
        assert fake.seeded == {}


async def test_a_start_cancelled_while_waiting_for_a_seed_slot_never_sends_its_seed(
    task: Task,
) -> None:
    gym = task.gym_servers[0].name
    release = asyncio.Event()
    async with running(FakeGym(seed_release=release)) as fake:
        directory = GymDirectory({gym: fake.url}, max_concurrent_seeds=1)
        first = asyncio.ensure_future(
            TaskSession.start(task, directory=directory, seed_sql={gym: "-"})
        )
        waiting = asyncio.ensure_future(
            TaskSession.start(task, directory=directory, seed_sql={gym: "-"})
        )
        await eventually(lambda: replica_stats(directory, gym)["seeds_waiting"] == 1)
        waiting.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        async with await first:
            pass
        assert fake.seeds_received == 1
        assert fake.seeded == {}
        assert replica_stats(directory, gym)["active"] == 0


def test_max_concurrent_seeds_must_be_positive() -> None:
    with pytest.raises(UsageError, match="max_concurrent_seeds"):
        GymDirectory({}, max_concurrent_seeds=0)


async def test_a_downed_gym_without_health_is_reprobed_over_mcp(
    fastmcp_json: UvicornThread,
) -> None:
    """The official SDK's server has no /health: the MCP handshake and a ping answer instead."""
    directory = GymDirectory({"sdk-gym": fastmcp_json.url}, probe_after=0.0)
    directory.mark_down(Lease(gym="sdk-gym", url=fastmcp_json.url))
    lease = await directory.acquire("sdk-gym")
    assert lease.url == fastmcp_json.url
    assert directory.gyms()["sdk-gym"][0].down_since is None
    directory.release(lease)


async def test_reprobe_counts_a_json_rpc_error_as_an_answer() -> None:
    async with running(FakeGym(health_status=404)) as fake:
        directory = GymDirectory({"fake": fake.url}, probe_after=0.0)
        directory.mark_down(Lease(gym="fake", url=fake.url))
        directory.release(await directory.acquire("fake"))
        assert fake.methods[:3] == ["initialize", "notifications/initialized", "ping"]


async def test_reprobe_of_a_gone_gym_without_health_fails() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    directory = GymDirectory({"gone": url}, probe_after=0.0)
    directory.mark_down(Lease(gym="gone", url=url))
    with pytest.raises(GymUnreachableError):
        await directory.acquire("gone")
    async with running(FakeGym(health_status=500)) as fake:  # /health answering 5xx: down
        directory = GymDirectory({"sick": fake.url}, probe_after=0.0)
        directory.mark_down(Lease(gym="sick", url=fake.url))
        with pytest.raises(GymUnreachableError):
            await directory.acquire("sick")
        assert "initialize" not in fake.methods


async def test_verdict_and_records_carry_per_tool_latencies(task: Task) -> None:
    steps = [(step["name"], step["arguments"]) for step in load_demo_trajectory()]
    async with LocalGym.demo() as gym:
        directory = GymDirectory({gym.name: gym.url})
        async with TaskSession.start(
            task, directory=directory, seed_root=PATHS.directory
        ) as session:
            for name, arguments in steps:
                await session.call_tool(name, arguments)
            refused = await session.call_tool("no_such_tool", {})
            verdict = await session.verify()
    assert refused.is_error
    assert verdict.success
    assert [(t.tool, t.gym) for t in verdict.tool_latencies_ms] == [(n, gym.name) for n, _ in steps]
    assert verdict.tool_latencies_ms == session.tool_latencies()
    assert all(t.latency_ms > 0 for t in verdict.tool_latencies_ms)
    reported = verdict.to_dict()["tool_latencies_ms"]
    assert [set(entry) for entry in reported] == [{"tool", "gym", "latency_ms"}] * len(steps)
    assert reported[0]["tool"] == steps[0][0]


async def test_one_directory_serves_two_event_loops_with_one_seed_bound(task: Task) -> None:
    """#20: a directory shared by loops in two threads (as the NeMo Gym server does) keeps
    one ``max_concurrent_seeds`` per replica across them, and probes a down replica from
    each loop without "attached to a different loop" errors."""
    gym = task.gym_servers[0].name
    async with running(FakeGym(seed_delay=0.05)) as fake:
        directory = GymDirectory({gym: fake.url}, max_concurrent_seeds=1, probe_after=0.0)

        async def four_tasks() -> None:
            async def one() -> None:
                async with await TaskSession.start(task, directory=directory, seed_sql={gym: "-"}):
                    pass

            await asyncio.gather(*(one() for _ in range(4)))

        def on_a_loop_of_its_own() -> None:
            asyncio.run(four_tasks())

        await asyncio.gather(
            asyncio.to_thread(on_a_loop_of_its_own), asyncio.to_thread(on_a_loop_of_its_own)
        )
        assert fake.seeds_received == 8
        assert fake.max_seeds_in_flight == 1
        assert fake.seeded == {}
        stats = replica_stats(directory, gym)
        assert (stats["seeding"], stats["seeds_waiting"], stats["active"]) == (0, 0, 0)
        assert stats["lifecycles"] == 8

        directory.mark_down(Lease(gym=gym, url=fake.url))  # both loops now probe it first
        await asyncio.gather(
            asyncio.to_thread(on_a_loop_of_its_own), asyncio.to_thread(on_a_loop_of_its_own)
        )
        assert fake.seeds_received == 16 and fake.max_seeds_in_flight == 1
        assert replica_stats(directory, gym)["down"] is False


async def test_stats_from_another_thread_while_fallback_gyms_are_added() -> None:
    """#20 review: ``stats()``/``gyms()`` read the table under the directory's lock, so a
    thread reporting while a loop adds unlisted gyms never sees it change under it."""
    directory = GymDirectory({})
    stop = threading.Event()
    errors: list[Exception] = []

    def report() -> None:
        while not stop.is_set():
            try:
                directory.stats()
            except Exception as exc:  # the failure under test
                errors.append(exc)
                return

    reporter = threading.Thread(target=report)
    reporter.start()
    try:
        for index in range(3000):
            lease = await directory.acquire(f"gym-{index}", fallback=f"http://127.0.0.1:9/{index}")
            directory.release(lease)
    finally:
        stop.set()
        reporter.join()
    assert errors == []
    assert len(directory.stats()["gyms"]) == 3000
