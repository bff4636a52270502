"""A new user's slips with TaskSession and GymDirectory: a message that says what to do."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from eog_core import Task, UsageError, load_task
from eog_core.errors import GymUnreachableError
from eog_core.gym import GymDirectory, TaskSession
from eog_core.local import LocalGym, demo_paths

PATHS = demo_paths()


def test_start_used_as_a_session_says_to_await_it() -> None:
    starting = TaskSession.start(load_task(PATHS.task))
    with pytest.raises(
        UsageError, match=r"session = await TaskSession\.start\(task, \.\.\.\)"
    ) as info:
        starting.call_tool("find_account", {"name": "x"})  # type: ignore[attr-defined]
    assert "async with TaskSession.start(task, ...) as session" in str(info.value)
    assert isinstance(
        info.value, AttributeError
    )  # hasattr() and getattr(..., default) keep working
    assert not hasattr(starting, "verify")
    with pytest.raises(UsageError, match="does not return a session yet"), starting:  # type: ignore[attr-defined]
        pass


def test_the_message_reaches_a_script_as_one_line(tmp_path: Path) -> None:
    script = tmp_path / "slip.py"
    script.write_text(
        "from eog_core import load_task\n"
        "from eog_core.gym import TaskSession\n"
        "from eog_core.local import demo_paths\n"
        "session = TaskSession.start(load_task(demo_paths().task))\n"
        "session.tools\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "TaskSession.start(...).tools" in last and "await TaskSession.start" in last
    assert "_Starting" not in done.stderr.replace("_StartNotAwaitedError", "")


def _task_pointing_at(url: str) -> Task:
    raw = json.loads(PATHS.task.read_text())
    raw["gym_servers_config"][0]["mcp_server_url"] = url
    return load_task(raw)


async def test_an_empty_directory_logs_that_it_uses_the_task_url(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with LocalGym.demo() as gym:
        task = _task_pointing_at(gym.url)
        with caplog.at_level(logging.WARNING, logger="eog_core"):
            async with TaskSession.start(
                task, directory=GymDirectory(), seed_root=PATHS.directory
            ) as session:
                assert gym.database_ids() == [session.database_ids[gym.name]]
        warnings = [r.getMessage() for r in caplog.records if r.name == "eog_core.gym.directory"]
        assert len(warnings) == 1
        assert (
            gym.name in warnings[0]
            and gym.url in warnings[0]
            and "allow_fallback=False" in warnings[0]
        )


async def test_a_directory_can_forbid_the_task_url() -> None:
    async with LocalGym.demo() as gym:
        task = _task_pointing_at(gym.url)
        with pytest.raises(GymUnreachableError, match="forbids using the task's URL") as info:
            await TaskSession.start(
                task, directory=GymDirectory(allow_fallback=False), seed_root=PATHS.directory
            )
        assert info.value.gym == gym.name
        assert gym.database_ids() == []  # nothing was seeded on the task's server
        listed = GymDirectory({gym.name: gym.url}, allow_fallback=False)
        async with TaskSession.start(task, directory=listed, seed_root=PATHS.directory) as session:
            assert session.database_ids[gym.name] in gym.database_ids()
