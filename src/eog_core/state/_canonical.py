"""The canonical state document, its bytes and its id.

A state is every table of every database a rollout's gyms hold::

    {"format": "eog-state/1",
     "gyms": {GYM: {"tables": {TABLE: {"columns": [...], "primary_key": [...],
                                       "rows": [{column: value}, ...]}}}}}

Tables are named as ``sqlite_master`` spells them; rows are ordered by primary
key (as SQLite orders the key's values), or, in a table with none, by the row's
canonical JSON. Values are JSON scalars, except a BLOB (``{"$base64": ...}``)
and a non-finite float (``{"$float": "inf" | "-inf" | "nan"}``). The bytes are
``json.dumps`` with sorted keys and no spaces, UTF-8, a lone surrogate written
as its ``\\udXXX`` escape; the state id is their sha256. Where the database
lives (its id) is not part of the state: equal contents, equal ids.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "STATE_FORMAT",
    "canonical_bytes",
    "canonical_value",
    "gym_state",
    "primary_keys",
    "state_document",
    "state_id",
    "table_state",
]

STATE_FORMAT = "eog-state/1"


def canonical_value(value: Any) -> Any:
    """A SQLite value as the document holds it."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    return value


def canonical_bytes(document: Any) -> bytes:
    """The document's one byte form: sorted keys, no spaces, UTF-8 (a lone surrogate, which
    UTF-8 cannot hold, as the JSON escape ``\\udXXX`` that reads back to it)."""
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8", errors="backslashreplace")


def state_id(document: Any) -> str:
    """The sha256 (hex) of the document's canonical bytes: equal states, equal ids."""
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def primary_keys(ddl: Mapping[str, str]) -> dict[str, tuple[list[str], list[str]]]:
    """Table -> (columns in table order, primary-key columns in key order), read by running
    each table's ``CREATE TABLE`` (from ``sqlite_master``) in an empty in-memory database:
    SQLite's own parser, so quoted names, composite keys, ``WITHOUT ROWID`` and an
    ``INTEGER PRIMARY KEY`` (the rowid's alias) read as SQLite reads them."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    with sqlite3.connect(":memory:") as connection:
        for table, sql in ddl.items():
            connection.execute(sql)
            info = connection.execute(
                "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", (table,)
            ).fetchall()
            columns = [str(name) for name, _ in info]
            key = [str(name) for name, pk in sorted(info, key=lambda c: c[1]) if pk]
            found[table] = (columns, key)
    connection.close()
    return found


def _sqlite_order(value: Any) -> tuple[int, Any]:
    """SQLite's order of values of mixed type: NULL, numbers, text, BLOB."""
    if value is None:
        return (0, 0)
    if isinstance(value, dict):  # a canonical BLOB or non-finite float
        if "$float" in value:
            text = value["$float"]
            return (1, math.inf if text == "inf" else -math.inf) if text != "nan" else (0, 0)
        return (3, base64.b64decode(value["$base64"]))
    if isinstance(value, bool | int | float):
        return (1, value)
    return (2, str(value).encode("utf-8", errors="surrogatepass"))


def table_state(
    columns: Sequence[str], primary_key: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """One table in canonical form: each row's values made canonical, rows sorted."""
    canonical = [{c: canonical_value(row.get(c)) for c in columns} for row in rows]
    if primary_key:
        canonical.sort(key=lambda row: tuple(_sqlite_order(row[c]) for c in primary_key))
    else:
        canonical.sort(key=canonical_bytes)
    return {"columns": list(columns), "primary_key": list(primary_key), "rows": canonical}


def gym_state(tables: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One gym's database: ``{"tables": {name: table_state(...)}}``."""
    return {"tables": dict(tables)}


def state_document(gyms: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The whole state: ``{"format": "eog-state/1", "gyms": {name: gym_state(...)}}``."""
    return {"format": STATE_FORMAT, "gyms": dict(gyms)}
