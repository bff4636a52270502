"""Offline scoring: answer verifier queries from SQLite snapshots as a gym would."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eog_core._sqlguard import QueryInterrupted, execute_guarded
from eog_core.errors import UsageError, VerificationError
from eog_core.verify._limit import apply_implicit_limit
from eog_core.verify._outcome import SqlOutcome

__all__ = ["DEFAULT_SQL_TIMEOUT", "SqliteSqlRunner"]

#: Seconds a verifier query may run before it is interrupted.
DEFAULT_SQL_TIMEOUT = 30.0

_TIME_FUNCTIONS = ("date", "time", "datetime", "julianday", "unixepoch", "strftime")
#: SQL keywords that read the clock, and the function of the pinned moment each becomes.
_TIME_KEYWORDS = {"current_timestamp": "datetime", "current_date": "date", "current_time": "time"}


class _Clock:
    """The pinned moment and the helper connection whose built-ins do the date arithmetic.

    After :meth:`release` the shadow functions compute with the real clock on a
    throwaway in-memory connection, so a lent connection keeps working.
    """

    def __init__(self, now: str) -> None:
        self.now: str | None = now
        self.helper: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", check_same_thread=False
        )
        self.lock = threading.Lock()  # queries on several gyms run in worker threads at once

    def evaluate(self, name: str, first_time_arg: int, *args: Any) -> Any:
        now = self.now
        swapped = [
            now
            if now is not None and i >= first_time_arg and isinstance(a, str) and a.lower() == "now"
            else a
            for i, a in enumerate(args)
        ]
        if now is not None and len(swapped) == first_time_arg:  # no time value means 'now'
            swapped.append(now)
        sql = f"SELECT {name}({', '.join('?' * len(swapped))})"
        with self.lock:
            if self.helper is not None:
                return self.helper.execute(sql, swapped).fetchone()[0]
        with contextlib.closing(sqlite3.connect(":memory:")) as scratch:
            return scratch.execute(sql, swapped).fetchone()[0]

    def release(self) -> None:
        with self.lock:
            self.now = None
            if self.helper is not None:
                self.helper.close()
                self.helper = None


def _pin_now(connection: sqlite3.Connection, clock: _Clock) -> None:
    """Make SQLite's date functions read ``'now'`` as the clock's fixed moment.

    The built-in functions are shadowed by same-named Python functions that
    swap the ``'now'`` argument and delegate to the built-ins of another
    connection. The keywords ``CURRENT_TIMESTAMP``, ``CURRENT_DATE`` and
    ``CURRENT_TIME`` are SQLite calls of the functions of those names with no
    arguments, which an application function overrides: they become
    ``datetime()``, ``date()`` and ``time()`` of the pinned moment.
    """
    for name in _TIME_FUNCTIONS:
        first = 1 if name == "strftime" else 0
        connection.create_function(
            name, -1, functools.partial(clock.evaluate, name, first), deterministic=True
        )
    for keyword, function in _TIME_KEYWORDS.items():
        connection.create_function(
            keyword, 0, functools.partial(clock.evaluate, function, 0), deterministic=True
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return value


class SqliteSqlRunner:
    """A :class:`SqlRunner` over SQLite files or connections, keyed by gym name.

    Answers as a gym's ``/api/sql-runner``: ``{"data": [row dicts]}`` on
    success; a rejected query fails with ``SQLite rejected the query: <sqlite
    error>`` (no HTTP is involved offline, so none is named). Verifier SQL is
    read-only under every policy: files are opened
    read-only and every query (lent connections included) runs under SQLite's
    authorizer, so a verifier cannot alter a snapshot (``read_only=False``
    lets a lent connection be written, as upstream's gyms allow). Queries run in
    a worker thread, off the event loop, and are interrupted after ``timeout``
    seconds (a failed outcome: ``verifier_error`` in strict scoring); a lent
    connection made with ``check_same_thread=True`` runs on the caller's
    thread, still bounded by the deadline. ``now`` (ISO text or datetime) pins
    SQLite's ``'now'`` for reproducible scoring of verifiers that use
    ``datetime('now')``. ``implicit_limit=100`` answers as a real gym's
    sql-runner does: a query without a LIMIT of its own runs with `` LIMIT 100``
    appended (:func:`apply_implicit_limit`) and the answer echoes the query as run
    (``{"data": [...], "query": ...}``); parity scoring offline uses it, to see
    what upstream saw on the gym. None (the default) answers every row.
    """

    def __init__(
        self,
        databases: Mapping[str, str | os.PathLike[str] | sqlite3.Connection],
        *,
        now: str | datetime | None = None,
        timeout: float | None = DEFAULT_SQL_TIMEOUT,
        read_only: bool = True,
        implicit_limit: int | None = None,
    ) -> None:
        if implicit_limit is not None and (type(implicit_limit) is not int or implicit_limit < 0):
            raise UsageError(
                f"implicit_limit must be a whole number of rows or None, got {implicit_limit!r}"
            )
        self._implicit_limit = implicit_limit
        if timeout is not None and not timeout > 0:
            raise UsageError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        self._connections: dict[str, sqlite3.Connection] = {}
        self._owned: list[sqlite3.Connection] = []
        self._locks: dict[int, threading.Lock] = {}
        self._same_thread_only: set[int] = set()
        self._timeout = timeout
        self._read_only = read_only
        pinned = self._format_now(now)
        self._clock = _Clock(pinned) if pinned is not None else None
        if (
            pinned is not None
            and self._clock is not None
            and self._clock.evaluate("datetime", 0, pinned) is None
        ):
            self._clock.release()
            raise UsageError(
                f"now={pinned!r} is not a time SQLite understands "
                "(use e.g. '2026-01-05 12:00:00' or '2026-01-05T12:00:00Z')"
            )
        try:
            for gym, source in databases.items():
                connection = (
                    source if isinstance(source, sqlite3.Connection) else self._open(gym, source)
                )
                if self._clock is not None:
                    _pin_now(connection, self._clock)
                self._connections[gym] = connection
                self._locks.setdefault(id(connection), threading.Lock())
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _format_now(now: str | datetime | None) -> str | None:
        if now is None or isinstance(now, str):
            return now
        if now.tzinfo is not None:
            now = now.astimezone(UTC).replace(tzinfo=None)
        return now.isoformat(sep=" ")

    def _open(self, gym: str, source: str | os.PathLike[str]) -> sqlite3.Connection:
        path = Path(source)
        if path.is_dir():
            raise VerificationError(
                f"database snapshot for gym {gym!r} is a directory, not a SQLite file: {path}"
            )
        if not path.is_file():
            raise VerificationError(f"database snapshot for gym {gym!r} not found: {path}")
        try:
            connection = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise VerificationError(
                f"database snapshot for gym {gym!r} is not a SQLite file: {path} ({exc})"
            ) from exc
        self._owned.append(connection)
        return connection

    @property
    def gyms(self) -> tuple[str, ...]:
        return tuple(self._connections)

    @property
    def implicit_limit(self) -> int | None:
        """The row cap on a query without a LIMIT of its own (None: every row is answered)."""
        return self._implicit_limit

    def query(self, gym_name: str, query: str) -> SqlOutcome:
        """Run ``query`` on the calling thread (the async method runs it in a worker thread)."""
        return self._query(gym_name, query, None)

    def _query(self, gym_name: str, query: str, cancelled: threading.Event | None) -> SqlOutcome:
        connection = self._connections.get(gym_name)
        if connection is None:
            return SqlOutcome.failed(f"no database snapshot for gym '{gym_name}'")
        limit = self._implicit_limit
        as_run = query if limit is None else apply_implicit_limit(query, limit)
        try:
            with self._locks[id(connection)]:
                columns, rows = execute_guarded(
                    connection,
                    as_run,
                    read_only=self._read_only,
                    timeout=self._timeout,
                    cancelled=cancelled,
                )
        except QueryInterrupted as exc:
            return SqlOutcome.failed(str(exc))
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            if isinstance(exc, sqlite3.ProgrammingError) and "thread" in str(exc):
                raise  # a connection bound to another thread: _run_sql retries on the loop
            return SqlOutcome.failed(f"SQLite rejected the query: {exc}")
        data = [dict(zip(columns, map(_jsonable, row), strict=True)) for row in rows]
        return SqlOutcome.ok({"data": data} if limit is None else {"data": data, "query": as_run})

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        """The :class:`SqlRunner` method; ``database_id`` and ``context`` do not matter offline."""
        connection = self._connections.get(gym_name)
        if connection is None or id(connection) in self._same_thread_only:
            return self._query(gym_name, query, None)
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(self._query, gym_name, query, cancelled)
        except sqlite3.ProgrammingError:  # check_same_thread=True: only its own thread may use it
            self._same_thread_only.add(id(connection))
            return self._query(gym_name, query, None)
        except asyncio.CancelledError:
            cancelled.set()  # the worker's progress handler stops the query
            raise

    def close(self) -> None:
        """Close the connections this runner opened; lent ones read the real clock again."""
        while self._owned:
            self._owned.pop().close()
        if self._clock is not None:
            self._clock.release()

    def __enter__(self) -> SqliteSqlRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
