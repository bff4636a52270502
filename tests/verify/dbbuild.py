"""Build a SQLite database on which every verifier query of a task runs.

Real seed dumps are not shipped with the data, so the tests synthesize the
schema the queries need: run each query, and on ``no such table`` /
``no such column`` add what SQLite asked for, until every query runs.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

_MISSING_TABLE = re.compile(r"no such table: (?:\w+\.)?(\w+)")
_MISSING_COLUMN = re.compile(r"no such column: (?:(\w+)\.)?(\w+)")
_TABLE_REF = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", re.IGNORECASE)
_KEYWORDS = {"where", "join", "on", "left", "inner", "group", "order", "limit", "cross", "natural"}


def _tables_and_aliases(query: str) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for table, alias in _TABLE_REF.findall(query):
        aliases[table] = table
        if alias and alias.lower() not in _KEYWORDS:
            aliases[alias] = table
    return aliases


def build_database(path: Path, queries: Iterable[str]) -> Path:
    """Create ``path`` with the tables and columns the queries reference."""
    connection = sqlite3.connect(path)
    try:
        for query in queries:
            for _ in range(200):
                try:
                    connection.execute(query).fetchall()
                    break
                except sqlite3.OperationalError as exc:
                    if not _repair(connection, query, str(exc)):
                        break  # a real error the query would also hit on a gym: keep it
        connection.commit()
    finally:
        connection.close()
    return path


def _repair(connection: sqlite3.Connection, query: str, error: str) -> bool:
    if match := _MISSING_TABLE.search(error):
        connection.execute(f'CREATE TABLE "{match.group(1)}" (rowid_placeholder INTEGER)')
        return True
    if match := _MISSING_COLUMN.search(error):
        qualifier, column = match.groups()
        aliases = _tables_and_aliases(query)
        tables = [aliases[qualifier]] if qualifier in aliases else sorted(set(aliases.values()))
        added = False
        for table in tables:
            existing = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
            if column not in existing:
                connection.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}"')
                added = True
        return added
    return False
