"""Awaiting a task's verifier queries and judges concurrently, in definition order.

The engine (``_engine.py``) prepares each verifier; what one waits for (its SQL
outcome, a judge's result) is awaited here, bounded, and cleaned up on failure
or cancellation so that no coroutine is left unawaited.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Iterable
from types import CoroutineType
from typing import Any

from eog_core.errors import EogError
from eog_core.tasks import DatabaseStateVerifier, Verifier
from eog_core.verify._outcome import SqlOutcome, SqlRunner

__all__ = ["Pending", "abandon", "bounded", "close_unstarted", "settle"]

#: A verifier and what it waits for: its SQL outcome (database_state), its result (response_check).
Pending = tuple[int, Verifier, Awaitable[Any]]


async def bounded(
    semaphore: asyncio.Semaphore,
    sql: SqlRunner,
    gym_name: str,
    database_id: str | None,
    query: str,
    context: dict[str, Any],
) -> SqlOutcome:
    async with semaphore:
        return await sql.run_sql(gym_name, database_id, query, context)


async def settle(pending: list[Pending]) -> list[Any]:
    """What every pending verifier waits for, awaited concurrently, in definition order.

    The first wait runs in the calling task and the others in tasks started
    with it, as ``gather`` would run them, without its per-child bookkeeping. A
    SQL runner's EogError is an unreachable gym's outcome. Any other exception
    (a programming error, seen once the waits defined before it are done) or
    a cancellation cancels the rest, waits for them and propagates.
    """
    loop = asyncio.get_running_loop()
    waits: list[Any] = [wait for _, _, wait in pending]
    tasks: list[asyncio.Future[Any]] = []
    try:
        for position in range(1, len(waits)):
            wait = waits[position]
            waits[position] = task = (
                loop.create_task(wait)
                if type(wait) is CoroutineType
                else asyncio.ensure_future(wait, loop=loop)
            )
            tasks.append(task)
        answers: list[Any] = []
        for (_, verifier, _), wait in zip(pending, waits, strict=True):
            try:
                answers.append(await wait)
            except EogError as exc:
                if not isinstance(verifier, DatabaseStateVerifier):
                    raise
                answers.append(SqlOutcome.failed(str(exc), kind="transport"))
    except BaseException:
        close_unstarted(waits)
        await abandon(tasks)
        raise
    return answers


def close_unstarted(waits: Iterable[Any]) -> None:
    """Close the coroutines that never ran, so none is reported as never awaited."""
    for wait in waits:
        if inspect.iscoroutine(wait) and inspect.getcoroutinestate(wait) == inspect.CORO_CREATED:
            wait.close()


async def abandon(tasks: list[asyncio.Future[Any]]) -> None:
    running = [task for task in tasks if not task.done()]
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: the first failure is the one that propagates
