"""TaskSession, GymDirectory and Janitor against real LocalGym servers on loopback."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from eog_core import PARITY, STRICT, Task, load_task
from eog_core.errors import (
    ClosedError,
    GymUnreachableError,
    RequestError,
    SchemaError,
    SeedError,
    SeedFileError,
)
from eog_core.gym import GymDirectory, Janitor, TaskSession, connection_pool, default_janitor
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from eog_core.tasks import task_from_mapping, to_upstream

PATHS = demo_paths()


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


@pytest.fixture
def task() -> Task:
    return load_task(PATHS.task)


def steps() -> list[tuple[str, dict[str, Any]]]:
    return [(step["name"], step["arguments"]) for step in load_demo_trajectory()]


async def eventually(condition: Callable[[], bool], limit: float = 5.0) -> None:
    """Wait until ``condition`` holds (the gym's counters offer no event to wait on)."""
    async with asyncio.timeout(limit):
        while not condition():  # noqa: ASYNC110 - bounded by the timeout above
            await asyncio.sleep(0.005)


def directory_for(*gyms: LocalGym) -> GymDirectory:
    return GymDirectory({g.name: g.url for g in gyms})


async def test_demo_rollout_scores_and_cleans_up(gym: LocalGym, task: Task) -> None:
    janitor = Janitor()
    async with TaskSession.start(
        task, directory=directory_for(gym), seed_root=PATHS.directory, janitor=janitor
    ) as session:
        assert gym.database_ids() == [session.database_ids[gym.name]]
        assert set(session.tools.names) == set(task.selected_tools or ())
        assert [t["name"] for t in session.tools.responses_tools()] == list(session.tools.names)
        before = await session.verify()
        assert not before.success and before.evaluation_completed
        for name, arguments in steps():
            result = await session.call_tool(name, arguments)
            assert not result.is_error, result.text
        strict = await session.verify(policy=STRICT)
        parity = await session.verify(policy=PARITY)
    assert strict.success and strict.num_scored == 6
    assert parity.success and parity.num_scored == 5  # the two telemetry checks collapse upstream
    assert [r.name for r in session.trajectory] == [name for name, _ in steps()]
    assert all(r.gym == gym.name and r.latency_ms > 0 for r in session.trajectory)
    assert gym.database_ids() == []
    assert janitor.leaked() == []


async def test_demo_rollout_over_sse_answers(task: Task) -> None:
    async with LocalGym.demo(response_mode="sse") as gym:
        async with TaskSession.start(
            task, directory=directory_for(gym), seed_root=PATHS.directory
        ) as session:
            for name, arguments in steps():
                assert not (await session.call_tool(name, arguments)).is_error
            verdict = await session.verify()
        assert verdict.success
        assert gym.database_ids() == []


async def test_tool_outside_the_task_never_reaches_the_gym(gym: LocalGym, task: Task) -> None:
    restricted = task_from_mapping(dict(to_upstream(task), restricted_tools=["update_case"]))
    async with TaskSession.start(
        restricted, directory=directory_for(gym), seed_root=PATHS.directory
    ) as session:
        gym.reset_counters()
        result = await session.call_tool(
            "update_case", {"case_id": "CS0001003", "state": "resolved"}
        )
        assert result.is_error and "not available" in result.text
        assert gym.tool_executions == {}
        assert gym.method_counts.get("tools/call", 0) == 0
        assert session.trajectory[-1].local
        bad = await session.call_tool("find_account", "{not json")
        assert bad.is_error and "not valid JSON" in bad.text
        good = await session.call_tool("find_account", json.dumps({"name": "Harbor Lane"}))
        assert not good.is_error


async def test_forward_any_tool_is_upstreams_behaviour(gym: LocalGym, task: Task) -> None:
    restricted = task_from_mapping(dict(to_upstream(task), restricted_tools=["update_case"]))
    async with TaskSession.start(
        restricted, directory=directory_for(gym), seed_root=PATHS.directory, forward_any_tool=True
    ) as session:
        result = await session.call_tool(
            "update_case", {"case_id": "CS0001003", "state": "resolved", "close_notes": "fixed"}
        )
        assert not result.is_error
        assert gym.tool_executions.get("update_case") == 1


async def test_missing_seed_file_names_the_path_and_seeds_nothing(
    gym: LocalGym, task: Task, tmp_path: Path
) -> None:
    with pytest.raises(SeedFileError) as info:
        await TaskSession.start(task, directory=directory_for(gym), seed_root=tmp_path)
    assert info.value.path == str(tmp_path / "seed.sql")
    assert str(tmp_path / "seed.sql") in str(info.value)
    assert "eog-core seeds unpack gym_dbs.zip --to DIR" in str(info.value)  # where they come from
    assert gym.request_counts.get("/api/seed-database", 0) == 0


def two_gym_task(first: LocalGym, second: LocalGym) -> Task:
    raw = json.loads(PATHS.task.read_text())
    gyms = [
        dict(raw["gym_servers_config"][0], mcp_server_name=g.name, mcp_server_url=g.url)
        for g in (first, second)
    ]
    return task_from_mapping(dict(raw, gym_servers_config=gyms, verifiers=[]))


async def test_partial_seed_failure_leaves_no_database() -> None:
    async with LocalGym.demo(name="gym-one") as one, LocalGym.demo(name="gym-two") as two:
        two.fail_next(1, 500, path="/api/seed-database", detail="disk full")
        with pytest.raises(SeedError) as info:
            await TaskSession.start(
                two_gym_task(one, two), directory=directory_for(one, two), seed_root=PATHS.directory
            )
        assert info.value.gym == "gym-two"
        assert "disk full" in str(info.value)
        assert one.request_counts.get("/api/seed-database") == 1
        assert one.database_ids() == []
        assert two.database_ids() == []


async def test_unreachable_gym_at_start_is_typed_and_leaks_nothing() -> None:
    async with LocalGym.demo(name="gym-one") as one:
        dead = LocalGym.demo(name="gym-two")
        await dead.start()
        dead_url = dead.url
        await dead.stop()
        task = task_from_mapping(
            dict(
                json.loads(PATHS.task.read_text()),
                verifiers=[],
                gym_servers_config=[
                    {
                        "mcp_server_name": "gym-one",
                        "mcp_server_url": one.url,
                        "seed_database_file": "seed.sql",
                    },
                    {
                        "mcp_server_name": "gym-two",
                        "mcp_server_url": dead_url,
                        "seed_database_file": "seed.sql",
                    },
                ],
            )
        )
        with pytest.raises(SeedError) as info:
            await TaskSession.start(task, seed_root=PATHS.directory)
        assert isinstance(info.value.__cause__, GymUnreachableError)
        assert one.database_ids() == []


async def test_killed_gym_gives_typed_errors_and_a_leak_report(task: Task) -> None:
    janitor = Janitor(base_delay=0.0)
    gym = LocalGym.demo()
    await gym.start()
    session = await TaskSession.start(
        task, directory=directory_for(gym), seed_root=PATHS.directory, janitor=janitor
    )
    database_id = session.database_ids[gym.name]
    await gym.stop()
    with pytest.raises(GymUnreachableError):
        await session.call_tool("find_account", {"name": "Harbor Lane"})
    assert session.trajectory[-1].is_error and not session.trajectory[-1].local
    await session.aclose()
    leaked = await janitor.aclose()
    assert [(e.gym, e.database_id) for e in leaked] == [(gym.name, database_id)]
    assert leaked[0].attempts >= 1 and leaked[0].last_error


async def test_janitor_retries_a_failed_deletion(gym: LocalGym, task: Task) -> None:
    janitor = Janitor(base_delay=0.0)
    session = await TaskSession.start(
        task, directory=directory_for(gym), seed_root=PATHS.directory, janitor=janitor
    )
    gym.fail_next(3, 500, path="/api/delete-database")
    await session.aclose()
    assert [e.database_id for e in janitor.leaked()] == [session.database_ids[gym.name]]
    assert gym.database_ids() == [session.database_ids[gym.name]]
    while janitor.leaked():
        await janitor.sweep(force=True)
    assert gym.database_ids() == []


async def test_idle_sessions_are_reaped_after_ttl_from_last_activity(
    gym: LocalGym, task: Task
) -> None:
    now = [1000.0]
    janitor = Janitor(ttl=60.0, clock=lambda: now[0])
    session = await TaskSession.start(
        task, directory=directory_for(gym), seed_root=PATHS.directory, janitor=janitor
    )
    session.last_activity = now[0]
    now[0] += 50
    await janitor.sweep()
    assert not session.closed
    session.last_activity = now[0]  # activity pushes the deadline
    now[0] += 50
    await janitor.sweep()
    assert not session.closed
    now[0] += 11
    await janitor.sweep()
    assert session.closed
    assert gym.database_ids() == []


async def test_closed_session_refuses_reuse(gym: LocalGym, task: Task) -> None:
    session = await TaskSession.start(task, directory=directory_for(gym), seed_root=PATHS.directory)
    await session.aclose()
    await session.aclose()  # idempotent
    with pytest.raises(ClosedError):
        await session.call_tool("find_account", {"name": "x"})
    with pytest.raises(ClosedError):
        await session.verify()


async def test_directory_balances_and_caps_replicas(task: Task) -> None:
    exhausted: list[str] = []
    async with LocalGym.demo() as a, LocalGym.demo() as b:
        directory = GymDirectory(
            {a.name: [a.url, b.url]},
            max_lifecycles=2,
            on_exhausted=lambda replica: exhausted.append(replica.url),
        )
        first = await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        second = await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        assert (len(a.database_ids()), len(b.database_ids())) == (1, 1)  # fewest active first
        await first.aclose()
        await second.aclose()
        third = await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        await third.aclose()
        assert exhausted == [a.url]
        fourth = await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        await fourth.aclose()
        assert sorted(exhausted) == sorted([a.url, b.url])
        with pytest.raises(GymUnreachableError, match="lifecycle cap"):
            await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        directory.reset(a.name, a.url)
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
            assert len(a.database_ids()) == 1


async def test_directory_marks_down_and_reprobes(task: Task) -> None:
    now = [0.0]
    async with LocalGym.demo() as alive:
        dead = LocalGym.demo()
        await dead.start()
        dead_url = dead.url
        await dead.stop()
        directory = GymDirectory(
            {alive.name: [dead_url, alive.url]}, probe_after=5.0, clock=lambda: now[0]
        )
        with pytest.raises(SeedError):  # the first pick is the dead replica
            await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        assert directory.gyms()[alive.name][0].down_since == 0.0
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
            assert len(alive.database_ids()) == 1  # the down replica is skipped
        now[0] = 10.0  # due for a probe, which fails: still skipped
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
            assert len(alive.database_ids()) == 1


def test_directory_from_env_and_files(tmp_path: Path) -> None:
    env = {"EOG_GYM_SN_CSM_SERVER": "http://a:8001, http://b:8001", "EOG_GYM_MY_GYM": "http://c:9"}
    directory = GymDirectory.from_env(env)
    assert [r.url for r in directory.gyms()["sn-csm-server"]] == ["http://a:8001", "http://b:8001"]
    assert "my-gym" in directory.gyms()
    (tmp_path / "gyms.toml").write_text('[gyms]\n"gym-calendar" = ["http://x:8003"]\n')
    assert list(GymDirectory.from_file(tmp_path / "gyms.toml").gyms()) == ["gym-calendar"]
    (tmp_path / "gyms.json").write_text('{"gym-email-mcp": "http://y:8004"}')
    assert (
        GymDirectory.from_file(tmp_path / "gyms.json").gyms()["gym-email-mcp"][0].url
        == "http://y:8004"
    )
    assert len(GymDirectory.defaults().gyms()) == 7


async def test_cancelled_close_hands_the_database_to_the_janitor(gym: LocalGym, task: Task) -> None:
    janitor = Janitor(base_delay=0.0)
    async with connection_pool():  # closing the session then sends nothing slow after the cancel
        session = await TaskSession.start(
            task, directory=directory_for(gym), seed_root=PATHS.directory, janitor=janitor
        )
        database_id = session.database_ids[gym.name]
        gym.set_latency(1.0)
        closing = asyncio.create_task(session.aclose())
        await eventually(
            lambda: gym.request_counts.get("/api/delete-database", 0) > 0
        )  # on the wire
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert session.closed
        assert [e.database_id for e in janitor.leaked()] == [database_id]
    gym.set_latency(0.0)
    assert await janitor.aclose() == []  # the janitor finished the job
    assert gym.database_ids() == []


async def test_cancelled_start_leaves_no_database(gym: LocalGym, task: Task) -> None:
    gym.set_latency(0.3)
    starting = asyncio.ensure_future(
        TaskSession.start(task, directory=directory_for(gym), seed_root=PATHS.directory)
    )
    await eventually(lambda: gym.request_counts.get("/api/seed-database", 0) > 0)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    leaked = await default_janitor().aclose()
    assert gym.database_ids() == [] and leaked == []


async def test_unserialisable_arguments_are_typed_and_recorded(gym: LocalGym, task: Task) -> None:
    async with TaskSession.start(
        task, directory=directory_for(gym), seed_root=PATHS.directory
    ) as session:
        with pytest.raises(RequestError):
            await session.call_tool("find_account", {"name": datetime.date(2026, 1, 1)})
        assert session.trajectory[-1].is_error and "not valid JSON" in (
            session.trajectory[-1].error or ""
        )
        assert gym.tool_executions == {}


async def test_refused_calls_do_not_count_for_tool_execution_verifiers(
    gym: LocalGym, task: Task
) -> None:
    raw = to_upstream(task)
    raw["verifiers"] = [
        {
            "verifier_type": "tool_execution",
            "name": "used_get_case",
            "validation_config": {"selected_tools": ["get_case"], "minimum_tool_calls": 1},
        }
    ]
    checked = task_from_mapping(raw)
    async with TaskSession.start(
        checked, directory=directory_for(gym), seed_root=PATHS.directory
    ) as session:
        refused = await session.call_tool(
            "get_case", {"case_id": "CS0001003"}
        )  # not in selected_tools
        assert refused.is_error
        verdict = await session.verify()
    assert not verdict.success
    assert verdict.results[0].upstream["tools_called"] == []


async def test_lifecycle_cap_holds_for_concurrent_sessions(task: Task) -> None:
    async with LocalGym.demo() as gym:
        directory = GymDirectory({gym.name: gym.url}, max_lifecycles=1)
        first = await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        with pytest.raises(GymUnreachableError, match="lifecycle cap"):
            await TaskSession.start(task, directory=directory, seed_root=PATHS.directory)
        await first.aclose()
        assert directory.gyms()[gym.name][0].retired


@pytest.mark.parametrize(
    "replicas", [{"g": [1]}, {"g": 5}, {"g": None}, {"g": []}, {"g": "ftp://x"}]
)
def test_directory_refuses_malformed_replicas(replicas: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(SchemaError):
        GymDirectory(replicas)
    (tmp_path / "gyms.json").write_text(json.dumps(replicas))
    with pytest.raises(SchemaError) as info:
        GymDirectory.from_file(tmp_path / "gyms.json")
    assert info.value.source == str(tmp_path / "gyms.json")
