"""An ``eog-state/1`` document back into SQLite: one database file per gym.

The document keeps each table's columns, primary key and rows, not its ``CREATE TABLE``
text, so the declared types are gone. Each column gets the affinity its values imply
(all integers ``INTEGER``, all reals ``REAL``, all text ``TEXT``, anything else none), so
a verifier's ``WHERE priority = '2'`` on an integer column matches as it did on the gym,
and every value is stored with the type the document gives it: exporting the database
again gives the same document (the same state id). Views, triggers and indexes were never
exported; a verifier that reads a view fails here.
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eog_core.errors import StateError
from eog_core.state._canonical import STATE_FORMAT

__all__ = ["materialise"]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_value(value: Any) -> Any:
    """A document value as SQLite stores it (the inverse of ``canonical_value``)."""
    if isinstance(value, Mapping):
        if "$base64" in value:
            return base64.b64decode(str(value["$base64"]))
        if "$float" in value:
            return float(str(value["$float"]))
        raise ValueError(f"unknown tagged value {dict(value)!r}")
    return value


def _affinity(values: Sequence[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds == {int}:
        return " INTEGER"
    if kinds == {float}:
        return " REAL"
    if kinds == {str}:
        return " TEXT"
    return ""


def _create(connection: sqlite3.Connection, name: str, table: Mapping[str, Any]) -> None:
    columns = [str(c) for c in table["columns"]]
    key = [str(c) for c in table.get("primary_key") or ()]
    rows = [{c: _sqlite_value(row.get(c)) for c in columns} for row in table["rows"]]
    parts = [f"{_quote(c)}{_affinity([r[c] for r in rows])}" for c in columns]
    if key:
        parts.append(f"PRIMARY KEY ({', '.join(map(_quote, key))})")
    connection.execute(f"CREATE TABLE {_quote(name)} ({', '.join(parts)})")
    marks = ", ".join("?" * len(columns))
    connection.executemany(
        f"INSERT INTO {_quote(name)} VALUES ({marks})", [[r[c] for c in columns] for r in rows]
    )


def materialise(document: Mapping[str, Any], folder: str | Path) -> dict[str, Path]:
    """Write each gym of ``document`` to ``folder/<n>.sqlite``; returns gym -> file.

    ``folder`` must exist; the caller removes it. A document that is not ``eog-state/1``
    (or whose rows do not fit their table) is a :class:`StateError`.
    """
    if not isinstance(document, Mapping) or document.get("format") != STATE_FORMAT:
        raise StateError(f"not an {STATE_FORMAT} document")
    files: dict[str, Path] = {}
    for number, (gym, state) in enumerate(sorted(document.get("gyms", {}).items())):
        path = Path(folder) / f"{number}.sqlite"
        try:
            with contextlib.closing(sqlite3.connect(path)) as connection:
                for name, table in sorted(state["tables"].items()):
                    _create(connection, str(name), table)
                connection.commit()
        except (sqlite3.Error, KeyError, TypeError, ValueError) as exc:
            raise StateError(f"gym {gym!r}: the state cannot be restored: {exc}", gym=gym) from exc
        files[str(gym)] = path
    return files
