"""Requests per task at steady state, counted by the servers: seed, one tool call, five
verifier queries, delete = 8 (issue #12). Against LocalGym and the official FastMCP."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest

from eog_core import STRICT, Task
from eog_core.gym import GymDirectory, TaskSession
from eog_core.local import DEMO_SERVER_NAME, LocalGym, read_demo_seed

from .conftest import UvicornThread
from .fastmcp_gym import RequestLog, build_fastmcp_gym
from .lifecycle_task import five_verifier_task

ONE_TASK = Counter(
    {
        ("POST", "/api/seed-database", None): 1,
        ("POST", "/mcp", "tools/call"): 1,
        ("POST", "/api/sql-runner", None): 5,
        ("DELETE", "/api/delete-database", None): 1,
    }
)


async def lifecycle(task: Task, directory: GymDirectory) -> None:
    """Seed, one tool call, five verifiers, delete."""
    async with TaskSession.start(
        task, directory=directory, seed_sql={DEMO_SERVER_NAME: read_demo_seed()}
    ) as session:
        result = await session.call_tool("find_account", {"name": "Harbor Lane"})
        assert not result.is_error, result.text
        verdict = await session.verify(policy=STRICT)
        assert verdict.num_scored == 5 and verdict.evaluation_completed


@pytest.fixture(scope="module")
def fastmcp_gym() -> Iterator[tuple[UvicornThread, RequestLog]]:
    log = RequestLog()
    with UvicornThread(build_fastmcp_gym(log)) as server:
        yield server, log


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_eight_requests_per_task_on_local_gym(concurrency: int) -> None:
    task = five_verifier_task()
    async with LocalGym.demo() as gym, GymDirectory({gym.name: gym.url}) as directory:
        await lifecycle(task, directory)  # the handshake and the tool listing, once
        assert gym.method_counts == {
            "initialize": 1,
            "notifications/initialized": 1,
            "tools/list": 1,
            "tools/call": 1,
        }
        gym.reset_counters()
        for _ in range(3):
            await asyncio.gather(*(lifecycle(task, directory) for _ in range(concurrency)))
        tasks = 3 * concurrency
        assert sum(gym.request_counts.values()) == 8 * tasks
        assert gym.request_counts == {
            "/api/seed-database": tasks,
            "/mcp": tasks,
            "/api/sql-runner": 5 * tasks,
            "/api/delete-database": tasks,
        }
        assert gym.method_counts == {"tools/call": tasks}
        assert gym.database_ids() == []


async def test_eight_requests_per_task_on_fastmcp(
    fastmcp_gym: tuple[UvicornThread, RequestLog],
) -> None:
    server, log = fastmcp_gym
    task = five_verifier_task()
    async with GymDirectory({DEMO_SERVER_NAME: server.url}) as directory:
        log.clear()
        await lifecycle(task, directory)
        warm_up = Counter(log.entries)
        assert warm_up == ONE_TASK + Counter(
            {
                ("POST", "/mcp", "initialize"): 1,
                ("POST", "/mcp", "notifications/initialized"): 1,
                ("POST", "/mcp", "tools/list"): 1,
            }
        )
        log.clear()
        await lifecycle(task, directory)
        assert len(log.entries) == 8
        assert Counter(log.entries) == ONE_TASK
        # The trace of one task, in order (the five verifier queries run concurrently).
        assert log.entries[0] == ("POST", "/api/seed-database", None)
        assert log.entries[1] == ("POST", "/mcp", "tools/call")
        assert log.entries[-1] == ("DELETE", "/api/delete-database", None)
        log.clear()
        await asyncio.gather(*(lifecycle(task, directory) for _ in range(4)))
        assert Counter(log.entries) == Counter({k: 4 * n for k, n in ONE_TASK.items()})
        log.clear()
    assert log.entries == [("DELETE", "/mcp", None)]  # the pool closed: the shared session ends


@pytest.mark.parametrize("given", ["a directory per rollout", "no directory"])
async def test_the_readme_example_pays_only_its_useful_requests(given: str) -> None:
    """#19: the pool (and the shared MCP session and tool list on it) lives from the first
    acquire until the loop ends, and TaskSession.start without a directory uses the loop's
    one default: after the first task, no initialize and no tools/list; per task exactly
    seed + tool calls + verifier queries (strict and parity) + delete."""
    import attrs

    from eog_core import PARITY, load_task
    from eog_core.gym import default_directory
    from eog_core.local import demo_paths, load_demo_trajectory

    paths = demo_paths()
    steps = load_demo_trajectory()
    async with LocalGym.demo() as gym:
        task = load_task(paths.task)
        task = attrs.evolve(
            task,
            gym_servers=tuple(  # the task's own URL is this gym's
                attrs.evolve(g, url=gym.url) for g in task.gym_servers
            ),
        )

        async def one() -> None:  # the README's embedding example, as written
            directory = None if given == "no directory" else GymDirectory({gym.name: gym.url})
            async with TaskSession.start(
                task, directory=directory, seed_root=paths.directory
            ) as session:
                for step in steps:
                    result = await session.call_tool(step["name"], step["arguments"])
                    assert not result.is_error, result.text
                strict = await session.verify(policy=STRICT)
                parity = await session.verify(policy=PARITY)
            assert strict.success and parity.success

        await one()
        assert (gym.method_counts["initialize"], gym.method_counts["tools/list"]) == (1, 1)
        gym.reset_counters()
        for _ in range(3):
            await one()
        queries = 3 * 2 * len(task.verifiers)
        assert gym.method_counts == {"tools/call": 3 * len(steps)}
        assert gym.request_counts == {
            "/api/seed-database": 3,
            "/mcp": 3 * len(steps),
            "/api/sql-runner": queries,
            "/api/delete-database": 3,
        }
        await default_directory().aclose()
        assert gym.database_ids() == []
