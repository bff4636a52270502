"""The local gym's databases: one in-memory SQLite connection per database id."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import attrs

__all__ = ["DatabaseExistsError", "DatabaseStore", "rows_as_dicts", "run_sql"]


class DatabaseExistsError(Exception):
    """A database with this id is already seeded."""


@attrs.define
class DatabaseStore:
    """Owns every seeded database; a database lives until deleted or the store closes."""

    _connections: dict[str, sqlite3.Connection] = attrs.field(factory=dict, init=False)
    _pending: set[str] = attrs.field(factory=set, init=False)

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

    def delete(self, database_id: str) -> bool:
        """Close and forget one database; False if it did not exist."""
        connection = self._connections.pop(database_id, None)
        if connection is None:
            return False
        connection.close()
        return True

    def close(self) -> None:
        """Close every database (idempotent)."""
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
