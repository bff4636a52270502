"""Coroutines run together, all or nothing: what the fleet's start needs so that a
failure or a Ctrl-C never leaves an engine command of ours running unawaited."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["all_or_nothing", "settle"]

T = TypeVar("T")


async def all_or_nothing(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run the coroutines at once; their results, in order. When one fails, or this is
    cancelled, the others are cancelled and awaited to their end (a shielded ``run``
    finishes its create) before the first failure, or the cancellation, is raised."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:  # the first failure in the members' order
            failure = task.exception() if task in done and not task.cancelled() else None
            if failure is not None:
                raise failure
        return [t.result() for t in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await settle(tasks)


async def settle(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every task has ended, through any further cancellation of ours."""
    cancelled: asyncio.CancelledError | None = None
    while not all(t.done() for t in tasks):
        try:
            await asyncio.wait([t for t in tasks if not t.done()])
        except asyncio.CancelledError as exc:
            cancelled = exc
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" warning
    if cancelled is not None:
        raise cancelled
