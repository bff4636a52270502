"""The local gym's databases: one in-memory SQLite connection per database id.

Tool calls and SQL-runner queries on one database take turns (an asyncio lock
per database). SQL-runner queries run in a worker thread with a deadline, so a
runaway query never blocks the gym's event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import attrs

from eog_core._sqlguard import QueryInterrupted, execute_guarded

__all__ = ["DatabaseExistsError", "DatabaseStore", "QueryInterrupted", "rows_as_dicts", "run_sql"]


class DatabaseExistsError(Exception):
    """A database with this id is already seeded."""


@attrs.define
class DatabaseStore:
    """Owns every seeded database; a database lives until deleted or the store closes."""

    _connections: dict[str, sqlite3.Connection] = attrs.field(factory=dict, init=False)
    _pending: set[str] = attrs.field(factory=set, init=False)
    _locks: dict[str, asyncio.Lock] = attrs.field(factory=dict, init=False)
    _running: dict[str, set[threading.Event]] = attrs.field(factory=dict, init=False)
    _lingering: set[asyncio.Future[Any]] = attrs.field(factory=set, init=False)

    def ids(self) -> list[str]:
        return sorted(self._connections)

    def get(self, database_id: str) -> sqlite3.Connection | None:
        return self._connections.get(database_id)

    def __contains__(self, database_id: object) -> bool:
        return database_id in self._connections

    def __len__(self) -> int:
        return len(self._connections)

    async def seed(self, database_id: str, sql_content: str) -> None:
        """Create a database and run the SQL script into it (in a worker thread).

        Raises DatabaseExistsError if the id is taken (or being seeded) and
        sqlite3.Error if the script fails; a failed seed leaves nothing behind.
        """
        if database_id in self._connections or database_id in self._pending:
            raise DatabaseExistsError(database_id)
        self._pending.add(database_id)
        try:
            connection = await asyncio.to_thread(_build, sql_content)
        finally:
            self._pending.discard(database_id)
        self._connections[database_id] = connection

    def lock(self, database_id: str) -> asyncio.Lock:
        """The lock tool calls and SQL-runner queries on ``database_id`` hold in turn."""
        return self._locks.setdefault(database_id, asyncio.Lock())

    async def run_query(
        self, database_id: str, query: str, *, read_only: bool, deadline_s: float | None
    ) -> list[dict[str, Any]]:
        """Run one SQL-runner statement in a worker thread; commit it unless ``read_only``.

        Raises KeyError for an unknown database, :class:`QueryInterrupted` past
        ``deadline_s`` seconds (or when the database is deleted or the gym stops meanwhile)
        and ``sqlite3.Error`` for a query SQLite rejects (with ``read_only``,
        any write).
        """
        lock = self.lock(database_id)
        await lock.acquire()
        held_by_worker = False
        try:
            connection = self._connections.get(database_id)
            if connection is None:
                raise KeyError(database_id)
            cancelled = threading.Event()
            running = self._running.setdefault(database_id, set())
            running.add(cancelled)
            work = asyncio.ensure_future(
                asyncio.to_thread(
                    execute_guarded,
                    connection,
                    query,
                    read_only=read_only,
                    timeout=deadline_s,
                    cancelled=cancelled,
                    commit=not read_only,
                )
            )
            try:
                done, _ = await asyncio.wait([work], timeout=deadline_s)
            except asyncio.CancelledError:
                cancelled.set()  # stop the worker, and keep the lock until it has stopped
                await asyncio.wait([work])
                raise
            finally:
                running.discard(cancelled)
            if not done:
                # One SQLite call the progress handler cannot interrupt (a huge printf):
                # answer now; the lock stays with the worker until SQLite lets it go.
                cancelled.set()
                held_by_worker = True
                self._lingering.add(work)
                work.add_done_callback(self._released_by(lock))
                raise QueryInterrupted("timeout", deadline_s)
            columns, rows = work.result()
        finally:
            if not held_by_worker:
                lock.release()
        return [dict(zip(columns, _jsonable_row(row), strict=True)) for row in rows]

    def _released_by(self, lock: asyncio.Lock) -> Callable[[asyncio.Future[Any]], None]:
        def release(work: asyncio.Future[Any]) -> None:
            lock.release()
            self._lingering.discard(work)

        return release

    async def settle(self) -> None:
        """Wait for workers still inside SQLite after their query was answered as timed out."""
        if self._lingering:
            await asyncio.wait(list(self._lingering))

    def running_queries(self) -> int:
        """How many SQL-runner queries are running now."""
        return sum(len(events) for events in self._running.values())

    def interrupt(self, database_id: str | None = None) -> None:
        """Stop the SQL-runner queries running on one database (or on all)."""
        ids = [database_id] if database_id is not None else list(self._running)
        for key in ids:
            for event in self._running.get(key, ()):
                event.set()

    async def delete_when_idle(self, database_id: str) -> bool:
        """Interrupt its queries, wait for the running tool call or query, then delete."""
        self.interrupt(database_id)
        async with self.lock(database_id):
            deleted = self.delete(database_id)
        if not self.lock(database_id).locked():
            self._locks.pop(database_id, None)
        return deleted

    def delete(self, database_id: str) -> bool:
        """Close and forget one database; False if it did not exist."""
        connection = self._connections.pop(database_id, None)
        self._running.pop(database_id, None)
        if connection is None:
            return False
        connection.close()
        return True

    def close(self) -> None:
        """Close every database (idempotent)."""
        self.interrupt()
        self._running.clear()
        self._locks.clear()
        while self._connections:
            _, connection = self._connections.popitem()
            connection.close()


def _build(sql_content: str) -> sqlite3.Connection:
    # check_same_thread=False: built in a worker thread, used on the event loop after.
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        connection.executescript(sql_content)
        connection.commit()
    except BaseException:
        connection.close()
        raise
    return connection


def rows_as_dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    """Fetch every row of an executed statement as {column: value} dicts."""
    if cursor.description is None:
        return []
    columns = [column[0] for column in cursor.description]
    return [dict(zip(columns, _jsonable_row(row), strict=True)) for row in cursor.fetchall()]


def _jsonable_row(row: tuple[Any, ...]) -> list[Any]:
    return [value.hex() if isinstance(value, bytes) else value for value in row]


def run_sql(connection: sqlite3.Connection, query: str) -> list[dict[str, Any]]:
    """Run one statement, commit, and return its rows; roll back and re-raise on error."""
    try:
        cursor = connection.execute(query)
        rows = rows_as_dicts(cursor)
        connection.commit()
    except sqlite3.Error:
        connection.rollback()
        raise
    return rows
