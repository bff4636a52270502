"""InFlight on both ways of finding the current task: asyncio's private dict (3.11) and
``asyncio.current_task`` (the fallback when the private name is gone)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from eog_core.errors import ClosedError
from eog_core.gym import _in_flight
from eog_core.gym._in_flight import InFlight


@pytest.fixture(params=["private", "fallback"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "private":
        if _in_flight._CURRENT_TASKS is None:
            pytest.skip("no private current-task dict on this Python")
    else:
        monkeypatch.setattr(_in_flight, "_CURRENT_TASKS", None)
    return str(request.param)


def test_the_private_dict_is_used_on_3_11_and_dropped_when_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if sys.version_info < (3, 12):
        assert _in_flight._private_current_tasks() is asyncio.tasks._current_tasks  # type: ignore[attr-defined]
    monkeypatch.delattr(asyncio.tasks, "_current_tasks", raising=False)
    assert _in_flight._private_current_tasks() is None
    monkeypatch.setattr(asyncio.tasks, "_current_tasks", object(), raising=False)
    assert _in_flight._private_current_tasks() is None


def test_enter_counts_the_current_task(path: str) -> None:
    async def main() -> None:
        calls = InFlight()
        assert not calls
        task = calls.enter()
        assert task is asyncio.current_task()
        assert calls.enter() is task
        calls.leave(task)
        assert calls
        calls.leave(task)
        assert not calls

    asyncio.run(main())


def test_stop_ends_other_tasks_with_closed_error(path: str) -> None:
    async def request(calls: InFlight, entered: asyncio.Event) -> None:
        task = calls.enter()
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            calls.raise_if_stopped(task, "the client")
            raise
        finally:
            calls.leave(task)

    async def main() -> None:
        calls = InFlight()
        entered = asyncio.Event()
        other = asyncio.create_task(request(calls, entered))
        await entered.wait()
        mine = calls.enter()  # the closing task's own request is left alone
        await calls.stop(5.0)
        with pytest.raises(ClosedError):
            await other
        assert mine is asyncio.current_task()
        calls.leave(mine)
        assert not calls

    asyncio.run(main())
