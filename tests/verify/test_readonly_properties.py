"""Property: generated writes are all refused, generated SELECTs all accepted, and nothing the
check accepts changes a real SQLite database."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from eog_core.verify import read_only_problem

pytestmark = pytest.mark.property

SCHEMA = """
CREATE TABLE t (a INTEGER, b TEXT, "select" TEXT, [delete] TEXT);
INSERT INTO t VALUES (1, 'x', 'y', 'z'), (2, 'it''s', NULL, ';');
"""


def keyword(word: str) -> st.SearchStrategy[str]:
    """A keyword in random letter case."""
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flags: "".join(
            c.upper() if up else c.lower() for c, up in zip(word, flags, strict=True)
        )
    )


# Text SQLite skips between tokens: spaces, newlines and comments that hold quotes and keywords.
gaps = st.lists(
    st.sampled_from([" ", "\n", "\t", " -- DELETE ' \" ;\n", " /* ' ; INSERT */ ", "/**/"]),
    min_size=1,
    max_size=2,
).map("".join)
# String literals hold anything: quotes are doubled, backslashes are plain characters.
strings = (
    st.text(max_size=12)
    .filter(lambda s: "\x00" not in s)
    .map(lambda s: "'" + s.replace("'", "''") + "'")
)
columns = st.sampled_from(["a", "b", '"select"', "[delete]", "`b`", "t.a", '"a"'])
literals = st.one_of(
    strings, st.integers(-999, 999).map(str), st.sampled_from(["NULL", "1.5", "x'41'"])
)
expressions = st.recursive(
    columns | literals,
    lambda inner: st.one_of(
        st.tuples(
            inner, st.sampled_from(["=", "<>", "<", "||", "+", "AND", "OR", "LIKE"]), inner
        ).map(lambda parts: f"({parts[0]} {parts[1]} {parts[2]})"),
        st.tuples(
            st.sampled_from(
                [
                    "replace({0}, {1}, 'q')",
                    "REPLACE ({0}, {1}, {0})",
                    "lower({0})",
                    "coalesce({0}, {1})",
                    "ifnull({1}, {0})",
                ]
            ),
            inner,
            inner,
        ).map(lambda parts: parts[0].format(parts[1], parts[2])),
    ),
    max_leaves=6,
)


@st.composite
def selects(draw: st.DrawFn, *, endings: tuple[str, ...] = ("", ";", "; -- done", " ;\n")) -> str:
    gap = draw(gaps)
    items = draw(st.lists(expressions, min_size=1, max_size=3))
    query = f"{draw(keyword('SELECT'))}{gap}{', '.join(items)}{gap}{draw(keyword('FROM'))} t"
    if draw(st.booleans()):
        query += f"{gap}{draw(keyword('WHERE'))} {draw(expressions)}"
    if draw(st.booleans()):
        materialized = draw(st.sampled_from(["", "MATERIALIZED ", "NOT MATERIALIZED "]))
        query = f"{draw(keyword('WITH'))} x AS {materialized}(SELECT 1){gap}{query}"
    return query + draw(st.sampled_from(endings))


WRITE_BODIES = [
    "INSERT INTO t (a) VALUES (9)",
    "INSERT INTO t SELECT * FROM t",
    "REPLACE INTO t VALUES (9, 'r', 'r', 'r')",
    "INSERT OR REPLACE INTO t (a) VALUES (9)",
    "UPDATE t SET a = 9",
    "UPDATE OR REPLACE t SET b = 'u'",
    "DELETE FROM t",
    "INSERT INTO t (a) VALUES (1) ON CONFLICT DO UPDATE SET b = 'c'",
    "CREATE TABLE u (v)",
    "CREATE TEMP TABLE u (v)",
    "DROP TABLE t",
    "ALTER TABLE t ADD COLUMN c",
    "ATTACH DATABASE ':memory:' AS o",
    "PRAGMA user_version = 1",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s",
    "CREATE INDEX i ON t (a)",
    "CREATE VIEW v AS SELECT 1",
]


@st.composite
def writes(draw: st.DrawFn) -> str:
    body = draw(st.sampled_from(WRITE_BODIES))
    words = body.split(" ")
    body = draw(gaps).join(draw(keyword(w)) if w.isalpha() else w for w in words)
    shape = draw(st.sampled_from(["plain", "cte", "after-select", "after-string"]))
    if shape == "cte" and body.upper().startswith(("INSERT", "REPLACE", "UPDATE", "DELETE")):
        materialized = draw(st.sampled_from(["", "MATERIALIZED ", "NOT MATERIALIZED "]))
        return f"WITH x AS {materialized}(SELECT 1){draw(gaps)}{body}"
    if shape == "after-select":
        return f"{draw(selects(endings=('', ';')))}; {body}"
    if shape == "after-string":  # the backslash trick: SQLite has no escapes, the string ends early
        return f"SELECT '\\'; {body}; --'"
    return body


@given(writes())
@example("WITH x AS MATERIALIZED (SELECT 1) INSERT INTO t SELECT * FROM t")
@example("SELECT $$; DELETE FROM t; $$")
def test_generated_writes_are_refused(query: str) -> None:
    assert read_only_problem(query) is not None


@pytest.fixture(scope="module")
def database() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.executescript(SCHEMA)
    yield connection
    connection.close()


@given(selects())
def test_generated_selects_are_accepted_and_valid(database: sqlite3.Connection, query: str) -> None:
    assert read_only_problem(query) is None, query
    database.execute(query).fetchall()  # valid SQLite, one statement


SOUP = [
    "SELECT",
    "WITH",
    "x",
    "AS",
    "MATERIALIZED",
    "NOT",
    "(",
    ")",
    "INSERT",
    "INTO",
    "t",
    "VALUES",
    "1",
    "'",
    '"',
    "[",
    "]",
    "`",
    ";",
    "--",
    "/*",
    "*/",
    "\n",
    " ",
    "$",
    "\\",
    "REPLACE",
    "DELETE",
    "FROM",
    "UPDATE",
    "SET",
    "a",
    "=",
    ",",
    "*",
    "''",
    "x'",
    "PRAGMA",
    "user_version",
    "CREATE",
    "TABLE",
    "u",
    "v",
    "DROP",
    "SELECT 1",
    "||",
    "e",
    ".",
    "?",
    ":",
    "@",
    "ATTACH",
    "DATABASE",
]


def state(connection: sqlite3.Connection) -> tuple[object, ...]:
    return (
        connection.total_changes,
        connection.execute("PRAGMA schema_version").fetchone(),
        connection.execute("PRAGMA user_version").fetchone(),
        connection.execute("PRAGMA database_list").fetchall(),
        connection.execute("SELECT * FROM t ORDER BY rowid").fetchall(),
    )


soup = st.lists(st.sampled_from(SOUP), max_size=25).map("".join) | st.lists(
    st.sampled_from(SOUP), max_size=25
).map(" ".join)
read_starts = st.sampled_from(
    ["SELECT ", "select 1 ", "WITH x AS (SELECT 1) ", "VALUES (1) ", "SELECT a FROM t "]
)


@given(soup | st.tuples(read_starts, soup).map("".join) | st.tuples(selects(), soup).map("".join))
@example("WITH x AS (SELECT 1) INSERT INTO t (a) SELECT 1 FROM x")
@example('SELECT 1 AS "INSERT"')
def test_nothing_accepted_changes_a_real_database(query: str) -> None:
    event("refused" if read_only_problem(query) else "accepted")
    if read_only_problem(query) is not None:
        return
    connection = sqlite3.connect(
        ":memory:", isolation_level=None
    )  # autocommit: a write would stick
    try:
        connection.executescript(SCHEMA)
        before = state(connection)
        with contextlib.suppress(sqlite3.Error):
            connection.executescript(query)  # executescript runs every statement SQLite sees
        assert state(connection) == before, query
    finally:
        connection.close()
