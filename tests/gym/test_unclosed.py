"""An unclosed GymClient or TaskSession says so when it is collected (a ResourceWarning,
as svcs warns); one never used, or closed, says nothing. Against LocalGym."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import AsyncIterator

import pytest

from eog_core import load_task
from eog_core.errors import ClosedError
from eog_core.gym import GymClient, GymDirectory, Janitor, TaskSession
from eog_core.local import LocalGym, demo_paths

PATHS = demo_paths()


def drop_and_collect(held: list[object]) -> None:
    held.clear()
    gc.collect()


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


async def test_a_used_client_collected_unclosed_warns(gym: LocalGym) -> None:
    held = [GymClient(gym.url, name="demo")]
    assert await held[0].health()
    with pytest.warns(ResourceWarning, match=r"unclosed GymClient demo: use `async with"):
        drop_and_collect(held)


async def test_a_client_never_used_or_closed_is_collected_silently(gym: LocalGym) -> None:
    closed = GymClient(gym.url)
    await closed.health()
    await closed.aclose()
    with pytest.raises(ClosedError):
        await closed.list_tools()  # closed is a state of its own: reuse is refused
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unused = GymClient(gym.url)
        del unused, closed
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_task_session_left_open_when_its_loop_ends_warns() -> None:
    """The janitor's loop holds (and would reap) a live session; once the event loop has
    ended, nothing does, and the collected session warns that it was never closed."""
    left: dict[str, list[str]] = {}

    async def leave_a_session_open() -> None:
        async with LocalGym.demo() as gym, GymDirectory({gym.name: gym.url}) as directory:
            session = await TaskSession.start(
                load_task(PATHS.task),
                directory=directory,
                seed_root=PATHS.directory,
                janitor=Janitor(),
            )
            left["databases"] = sorted(session.database_ids.values())
            left["on the gym"] = gym.database_ids()

    asyncio.run(leave_a_session_open())
    with pytest.warns(ResourceWarning) as caught:
        gc.collect()
    assert left["databases"] == left["on the gym"]  # the session's own, never deleted
    messages = [str(w.message) for w in caught]
    assert any(
        m.startswith(
            "unclosed TaskSession of task 'demo_csm_fleet_renewal': its databases were not deleted"
        )
        for m in messages
    ), messages


async def test_a_closed_task_session_is_collected_silently(gym: LocalGym) -> None:
    task = load_task(PATHS.task)
    async with GymDirectory({gym.name: gym.url}) as directory:
        janitor = Janitor()
        async with TaskSession.start(
            task, directory=directory, seed_root=PATHS.directory, janitor=janitor
        ) as session:
            assert not session.closed
        assert session.closed
        gc.collect()  # what earlier tests left is not this test's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del session, janitor
            gc.collect()
        assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
        assert gym.database_ids() == []  # closing deleted them
