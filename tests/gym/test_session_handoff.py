"""What harnesses need around a TaskSession (#9): gym errors as results, handles that
re-attach in another event loop, a gym served from a thread, flat verdict rows, plain
leak reports, the demo tool snapshot and the public NeMo Gym row builder."""

from __future__ import annotations

import asyncio
import json
import pickle
from typing import Any

import pytest

from eog_core import STRICT, load_task, to_nemo_row
from eog_core.errors import GymProtocolError, GymTimeoutError, SchemaError, UsageError
from eog_core.gym import (
    GymDirectory,
    Janitor,
    SessionHandle,
    SessionStart,
    TaskSession,
    ToolErrors,
)
from eog_core.local import LocalGym, demo_paths, demo_tool_snapshot, load_demo_trajectory
from eog_core.model_view import tool_observation
from eog_core.tasks import to_upstream

PATHS = demo_paths()


def play(session: TaskSession) -> Any:
    async def run() -> None:
        for step in load_demo_trajectory():
            result = await session.call_tool(step["name"], step["arguments"])
            assert not result.is_error, result.text

    return run()


@pytest.mark.parametrize("mode", ["raise", "result"])
async def test_a_gym_fault_is_raised_or_answered_and_recorded_with_its_kind(
    mode: ToolErrors,
) -> None:
    async with LocalGym.demo() as gym, Janitor() as janitor:
        directory = GymDirectory({gym.name: gym.url})
        async with TaskSession.start(
            load_task(PATHS.task),
            directory=directory,
            seed_root=PATHS.directory,
            janitor=janitor,
            tool_errors=mode,
        ) as session:
            gym.drop_next(after_tool_call=True)
            if mode == "raise":
                with pytest.raises(GymProtocolError):
                    await session.call_tool("find_account", {"name": "Harbor Lane"})
            else:
                result = await session.call_tool("find_account", {"name": "Harbor Lane"})
                assert result.is_error and result.text.startswith("Error: ")
                assert json.loads(tool_observation(result))["isError"] is True
            record = session.trajectory[-1]
            assert (record.is_error, record.error_kind, record.gym) == (
                True,
                "gym_protocol",
                gym.name,
            )
            again = await session.call_tool("find_account", {"name": "Harbor Lane"})
            assert not again.is_error and session.trajectory[-1].error_kind is None
        assert gym.database_ids() == []


class _HangingGym(LocalGym):
    """A local gym whose start never ends (a port that never binds, a stuck setup)."""

    async def start(self) -> None:
        await asyncio.Event().wait()


def test_run_in_thread_raises_a_typed_error_when_the_gym_does_not_start() -> None:
    """Only EogErrors leave the library: a start that hangs is a GymTimeoutError (it was
    concurrent.futures' bare TimeoutError), and the thread is stopped."""
    gym = _HangingGym.demo()
    with (
        pytest.raises(GymTimeoutError, match=r"did not start within 0\.2 s"),
        gym.run_in_thread(timeout=0.2),
    ):
        pytest.fail("the block must not run")


def test_a_session_seeded_in_one_event_loop_is_finished_in_another() -> None:
    task = load_task(PATHS.task)
    with LocalGym.demo().run_in_thread() as gym:
        directory = GymDirectory({gym.name: gym.url})

        async def seed() -> dict[str, Any]:
            async with Janitor() as janitor:
                session = await TaskSession.start(
                    task, directory=directory, seed_root=PATHS.directory, janitor=janitor
                )
                await session.call_tool(**load_demo_trajectory()[0])
                handle = await session.detach()
                assert session.closed
            return handle.to_dict()

        wire = json.loads(json.dumps(asyncio.run(seed())))
        assert gym.database_ids() == list(wire["database_ids"].values())

        async def finish() -> Any:
            handle = pickle.loads(pickle.dumps(SessionHandle.from_dict(wire)))
            async with Janitor() as janitor:
                async with TaskSession.attach(handle, janitor=janitor) as session:
                    assert session.tools.names == tuple(t["name"] for t in wire["tools"])
                    await play(session)
                    verdict = await session.verify(policy=STRICT)
                assert await janitor.aclose() == []
            return verdict

        verdict = asyncio.run(finish())
        assert verdict.success and verdict.reward == 1.0
        assert (verdict.task_id, verdict.domain) == (task.task_id, task.domain)
        assert gym.database_ids() == []


async def test_a_handle_may_keep_the_databases_and_must_name_every_gym() -> None:
    async with LocalGym.demo() as gym, Janitor() as janitor:
        directory = GymDirectory({gym.name: gym.url})
        session = await TaskSession.start(
            load_task(PATHS.task), directory=directory, seed_root=PATHS.directory, janitor=janitor
        )
        handle = await session.detach()
        keep = SessionHandle.from_dict(handle.to_dict() | {"delete_on_close": False})
        attaching = TaskSession.attach(keep, janitor=janitor)
        assert isinstance(attaching, SessionStart)
        async with attaching as attached:
            assert attached.database_ids == handle.database_ids
        assert gym.database_ids() == list(handle.database_ids.values())
        async with TaskSession.attach(handle, janitor=janitor):
            pass
        assert gym.database_ids() == []
        with pytest.raises(SchemaError, match="no replica or database"):
            await TaskSession.attach(SessionHandle.from_dict(handle.to_dict() | {"gym_urls": {}}))
    with pytest.raises(SchemaError, match=r"\$\.database_ids"):
        SessionHandle.from_dict({"task": {}, "gym_urls": {}, "database_ids": []})


async def test_an_attach_that_fails_half_way_cleans_up_the_gyms_before() -> None:
    """A handle whose second gym cannot have a client (its URL is not http) fails to
    attach, and the first gym's database is deleted (the handle said delete_on_close)."""
    async with LocalGym.demo() as gym, Janitor() as janitor:
        directory = GymDirectory({gym.name: gym.url})
        session = await TaskSession.start(
            load_task(PATHS.task), directory=directory, seed_root=PATHS.directory, janitor=janitor
        )
        data = (await session.detach()).to_dict()
        assert gym.database_ids() == list(data["database_ids"].values())
        second = dict(data["task"]["gym_servers_config"][0], mcp_server_name="second-gym")
        data["task"]["gym_servers_config"].append(second)
        data["gym_urls"]["second-gym"] = "ftp://nowhere.example"
        data["database_ids"]["second-gym"] = "db_1_second"
        with pytest.raises(UsageError, match="http"):
            await TaskSession.attach(SessionHandle.from_dict(data), janitor=janitor)
        assert gym.database_ids() == []
        assert await janitor.aclose() == []


def test_verdict_rows_are_flat() -> None:
    async def run() -> list[dict[str, Any]]:
        rows = []
        async with LocalGym.demo() as gym, Janitor() as janitor:
            directory = GymDirectory({gym.name: gym.url})
            for repeat, solve in enumerate((True, False)):
                async with TaskSession.start(
                    load_task(PATHS.task),
                    directory=directory,
                    seed_root=PATHS.directory,
                    janitor=janitor,
                ) as session:
                    if solve:
                        await play(session)
                    rows.append((await session.verify(policy=STRICT)).to_row(repeat=repeat))
        return rows

    solved, idle = asyncio.run(run())
    assert (solved["reward"], idle["reward"], solved["repeat"], idle["repeat"]) == (1.0, 0.0, 0, 1)
    assert solved.keys() == idle.keys()
    for row in (solved, idle):
        for key, value in row.items():
            if isinstance(value, list):
                assert len({type(item) for item in value}) <= 1, key
            else:
                assert value is None or isinstance(value, str | int | float | bool), key
        assert len(json.loads(row["results_json"])) == row["num_defined"]
    assert all(solved["verifier_passed"]) and not all(idle["verifier_passed"])


async def test_leak_reports_are_plain_data() -> None:
    janitor = Janitor()
    janitor.adopt(gym="g", url="http://127.0.0.1:9", database_id="db_1", error="boom")
    left = await janitor.aclose()
    report = [entry.to_dict() for entry in left]
    assert json.loads(json.dumps(report)) == report
    assert report[0]["database_id"] == "db_1" and report[0]["attempts"] >= 1
    assert report[0]["seed_in_flight"] is False and "auth" not in report[0]


async def test_leak_reports_carry_no_url_credentials() -> None:
    """A report is for logs and stores: the gym URL's user:password part is redacted."""
    janitor = Janitor()
    janitor.adopt(
        gym="g", url="http://alice:pw-s3cret@127.0.0.1:9", database_id="db_1", error="boom"
    )
    (report,) = [entry.to_dict() for entry in await janitor.aclose()]
    assert "pw-s3cret" not in json.dumps(report) and report["url"] == "http://***@127.0.0.1:9"


async def test_the_demo_snapshot_is_what_the_demo_gym_lists() -> None:
    snapshot = demo_tool_snapshot()
    task = load_task(PATHS.task)
    async with LocalGym.demo() as gym, Janitor() as janitor:
        directory = GymDirectory({gym.name: gym.url})
        async with (
            TaskSession.start(
                task, directory=directory, seed_root=PATHS.directory, janitor=janitor
            ) as live,
            TaskSession.start(
                task,
                directory=directory,
                seed_root=PATHS.directory,
                janitor=janitor,
                tool_snapshots={gym.name: snapshot},
            ) as offline,
        ):
            assert live.tools == offline.tools
    row = to_nemo_row(task, {snapshot.gym_name: snapshot})
    assert row["responses_create_params"]["tools"] == live.tools.responses_tools()
    back = load_task(row)
    assert (back.task_id, to_upstream(back)["verifiers"]) == (
        task.task_id,
        to_upstream(task)["verifiers"],
    )
