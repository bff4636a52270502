"""The requests a gym client has in flight, by task, so that closing the client ends them."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import attrs

from eog_core.errors import ClosedError

__all__ = ["InFlight"]


def _private_current_tasks() -> dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None:
    """asyncio's private loop-to-task dict on 3.11 when it is there and a dict; else None, and
    :meth:`InFlight.enter` calls ``asyncio.current_task`` (docs/performance.md has the gain)."""
    if sys.version_info >= (3, 12):
        return None
    tasks = getattr(asyncio.tasks, "_current_tasks", None)
    return tasks if isinstance(tasks, dict) else None


_CURRENT_TASKS = _private_current_tasks()
"""On 3.11 ``asyncio.current_task`` is Python code around this dict (1,000 instructions of a
request's 2,300 for it, callgrind); from 3.12 it is C and called as it is."""


@attrs.define(eq=False)
class InFlight:
    """Counts each task's requests in flight; :meth:`stop` cancels them (they end with
    :class:`ClosedError`) and waits until they have left."""

    _calls: dict[asyncio.Task[Any], int] = attrs.field(factory=dict, init=False)
    """Tasks with requests in flight, and how many each."""
    _stopped: set[asyncio.Task[Any]] = attrs.field(factory=set, init=False)
    """Tasks that closing cancelled: their request ends with :class:`ClosedError`."""
    _leaving: dict[asyncio.Task[Any], asyncio.Future[None]] = attrs.field(factory=dict, init=False)
    """For each stopped task, a future set once its requests have left (closing waits)."""

    def __bool__(self) -> bool:
        return bool(self._calls)

    def enter(self) -> asyncio.Task[Any] | None:
        """Count one request of the current task in flight."""
        tasks = _CURRENT_TASKS
        task = asyncio.current_task() if tasks is None else tasks.get(asyncio.get_running_loop())
        if task is not None:
            calls = self._calls
            calls[task] = calls.get(task, 0) + 1
        return task

    def leave(self, task: asyncio.Task[Any] | None) -> None:
        if task is None:
            return
        calls = self._calls
        left = calls.pop(task, 1) - 1
        if left > 0:
            calls[task] = left
        elif self._leaving:
            gone = self._leaving.pop(task, None)
            if gone is not None and not gone.done():
                gone.set_result(None)

    def raise_if_stopped(self, task: asyncio.Task[Any] | None, what: str) -> None:
        """In a cancelled request: :class:`ClosedError` (``what`` was closed) when the
        cancellation was :meth:`stop` (and nobody else cancelled the task too)."""
        if task is None or task not in self._stopped:
            return
        self._stopped.discard(task)
        if task.uncancel() > 0:
            return  # cancelled by its caller too
        raise ClosedError(what) from None

    async def stop(self, time_limit: float) -> None:
        """End every request in flight but the current task's and wait (up to
        ``time_limit`` seconds) until they have left."""
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        stopping = []
        for task in list(self._calls):
            if task is current:
                continue
            self._stopped.add(task)
            task.cancel()
            stopping.append(self._leaving.setdefault(task, loop.create_future()))
        if stopping:
            await asyncio.wait(stopping, timeout=time_limit)
