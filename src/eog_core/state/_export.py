"""Export a rollout's databases through each gym's ``/api/sql-runner``.

The one path for every gym, LocalGym included: ``sqlite_master`` first, then
each table, every query with an explicit ``LIMIT`` of ``max_rows + 1`` and the
task's context headers (a real gym appends ``LIMIT 100`` to a query without
one). A table that answers ``max_rows + 1`` rows is a :class:`StateError`, never
a silent truncation. Each column is read with its ``typeof`` so a BLOB (sent as
hex) and an infinite float (sent as text) come back as what they are.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping
from typing import Any

import attrs

from eog_core.errors import StateError
from eog_core.gym import TaskSession
from eog_core.state._canonical import (
    canonical_bytes,
    gym_state,
    primary_keys,
    state_document,
    state_id,
    table_state,
)
from eog_core.verify import SqlRunner

__all__ = ["DEFAULT_MAX_ROWS", "StateSnapshot", "export_database", "snapshot"]

DEFAULT_MAX_ROWS = 100_000
"""Rows read from one table (and tables from one database) before the export refuses."""

_CONCURRENT_TABLES = 8  # queries in flight per database, as the verifier engine sends them
_MASTER = (
    "SELECT name, type, sql FROM sqlite_master WHERE type = 'table' "
    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT {limit}"
)


@attrs.frozen(kw_only=True)
class StateSnapshot:
    """The state of every database a session seeded, at one moment."""

    document: Mapping[str, Any] = attrs.field(repr=False)
    """The canonical document (:mod:`eog_core.state._canonical`)."""
    id: str
    """The sha256 of :attr:`data`."""
    data: bytes = attrs.field(repr=False)
    """The canonical bytes."""
    database_ids: Mapping[str, str]
    """Gym -> the database exported (where the state was, not part of it)."""

    @property
    def size(self) -> int:
        """Bytes of the canonical form (before compression)."""
        return len(self.data)

    @classmethod
    def of(cls, document: Mapping[str, Any], database_ids: Mapping[str, str]) -> StateSnapshot:
        data = canonical_bytes(document)
        return cls(document=document, id=state_id(document), data=data, database_ids=database_ids)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table_query(table: str, columns: list[str], limit: int) -> str:
    parts = []
    for index, column in enumerate(columns):
        q = _quote(column)
        parts.append(
            f"CASE typeof({q}) WHEN 'blob' THEN hex({q}) WHEN 'real' THEN CASE WHEN {q} = 9e999 "
            f"THEN 'inf' WHEN {q} = -9e999 THEN '-inf' ELSE {q} END ELSE {q} END AS v{index}, "
            f"typeof({q}) AS t{index}"
        )
    return f"SELECT {', '.join(parts)} FROM {_quote(table)} LIMIT {limit}"


def _value(kind: Any, value: Any) -> Any:
    if kind == "blob":
        return bytes.fromhex(str(value))
    if kind == "real":
        return float(value)  # "inf" and "-inf" included
    if kind == "integer":
        return int(value)
    if kind == "text":
        return str(value)
    return None


async def _rows(
    sql: SqlRunner,
    gym: str,
    database_id: str,
    context: Mapping[str, str],
    query: str,
    *,
    what: str,
    table: str | None,
    limit: int,
) -> list[Mapping[str, Any]]:
    outcome = await sql.run_sql(gym, database_id, query, context)
    if not outcome.success:
        raise StateError(
            f"gym {gym!r}: reading {what} failed: {outcome.error}", gym=gym, table=table
        )
    body = outcome.body
    rows = body.get("data") if isinstance(body, Mapping) else body
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise StateError(
            f"gym {gym!r}: reading {what}: the SQL runner's answer holds no list of rows",
            gym=gym,
            table=table,
        )
    if len(rows) >= limit:
        raise StateError(
            f"gym {gym!r}: {what} holds more than {limit - 1} rows, the export's bound "
            "(max_rows; --max-state-rows); the state is not captured rather than cut short",
            gym=gym,
            table=table,
        )
    return rows


async def export_database(
    sql: SqlRunner,
    gym: str,
    database_id: str,
    context: Mapping[str, str] | None = None,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> dict[str, Any]:
    """One database as :func:`~eog_core.state._canonical.gym_state`, read through ``sql``."""
    limit = max_rows + 1
    context = dict(context or {})
    master = await _rows(
        sql,
        gym,
        database_id,
        context,
        _MASTER.format(limit=limit),
        what="sqlite_master",
        table=None,
        limit=limit,
    )
    ddl = {
        str(row["name"]): str(row["sql"])
        for row in master
        if row.get("sql") and not str(row["sql"]).lstrip().upper().startswith("CREATE VIRTUAL")
    }
    try:
        keys = primary_keys(ddl)
    except sqlite3.Error as exc:
        raise StateError(f"gym {gym!r}: the schema could not be read: {exc}", gym=gym) from exc
    bound = asyncio.Semaphore(_CONCURRENT_TABLES)

    async def read(table: str, columns: list[str], key: list[str]) -> dict[str, Any]:
        async with bound:
            rows = await _rows(
                sql,
                gym,
                database_id,
                context,
                _table_query(table, columns, limit),
                what=f"table {table!r}",
                table=table,
                limit=limit,
            )
        try:
            values = [
                {c: _value(row.get(f"t{i}"), row.get(f"v{i}")) for i, c in enumerate(columns)}
                for row in rows
            ]
        except (TypeError, ValueError) as exc:
            raise StateError(
                f"gym {gym!r}: table {table!r} answered a value of the wrong type: {exc}",
                gym=gym,
                table=table,
            ) from exc
        return table_state(columns, key, values)

    read_tables = await asyncio.gather(*(read(t, c, k) for t, (c, k) in keys.items()))
    tables = dict(zip(keys, read_tables, strict=True))
    return gym_state(tables)


def _context(session: TaskSession, gym: str) -> dict[str, Any]:
    """The headers' context of ``gym``, as the verifier engine sends it with its queries."""
    server = session.task.gym(gym)
    context: dict[str, Any] = dict(server.context) if server else {}
    legacy = session.task.legacy.get("context")
    if isinstance(legacy, Mapping):
        context.update(legacy)
    return context


async def snapshot(session: TaskSession, *, max_rows: int = DEFAULT_MAX_ROWS) -> StateSnapshot:
    """Export every database ``session`` seeded (its gyms concurrently), read-only."""
    sql = session.sql_runner(read_only=True)
    names = [g.name for g in session.task.gym_servers if g.name in session.database_ids]
    exported = await asyncio.gather(
        *(
            export_database(
                sql,
                name,
                session.database_ids[name],
                _context(session, name),
                max_rows=max_rows,
            )
            for name in names
        )
    )
    document = state_document(dict(zip(names, exported, strict=True)))
    return StateSnapshot.of(document, {n: session.database_ids[n] for n in names})
