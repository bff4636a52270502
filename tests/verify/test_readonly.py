"""STRICT never writes: the conservative read-only check and the authorizer on databases we own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eog_core import PARITY, STRICT, SqliteSqlRunner, load_task, load_tasks, verify_task
from eog_core.tasks import DatabaseStateVerifier
from eog_core.verify import read_only_problem
from tests.verify.test_strict import check, make_db, task_with

# Each of these writes on SQLite (or is refused by SQLite itself); the text check must refuse all.
WRITES = [
    "WITH x AS MATERIALIZED (SELECT 1) INSERT INTO ticket (state) SELECT 'new' FROM x",
    "WITH x AS NOT MATERIALIZED (SELECT 1) INSERT INTO ticket (state) SELECT 'new' FROM x",
    "WITH x AS MATERIALIZED (SELECT 1, 'gone', 9, NULL) REPLACE INTO ticket SELECT * FROM x",
    "WITH x AS NOT MATERIALIZED (SELECT 1, 'gone', 9, NULL) REPLACE INTO ticket SELECT * FROM x",
    "WITH x AS (SELECT 1) UPDATE ticket SET state = 'gone'",
    "WITH x AS (SELECT 1) DELETE FROM ticket",
    "SELECT '\\'; DELETE FROM ticket; --'",
    "SELECT $$; DELETE FROM ticket; $$",
    "SELECT $a(') ; DELETE FROM ticket; --'",
    "SELECT 1; DELETE FROM ticket",
    "SELECT 1 /* ; */; DELETE FROM ticket",
    "DELETE FROM ticket",
    "delete from ticket",
    "INSERT INTO ticket (state) VALUES ('new') ON CONFLICT DO UPDATE SET state = 'gone'",
    "UPDATE ticket SET state = 'gone' RETURNING id",
    "REPLACE INTO ticket VALUES (1, 'gone', 9, NULL)",
    "PRAGMA query_only = 0",
    "PRAGMA user_version = 7",
    "ATTACH DATABASE ':memory:' AS other",
    "DETACH DATABASE main",
    "CREATE TABLE t2 (a)",
    "CREATE TEMP VIEW v AS SELECT 1",
    "DROP TABLE ticket",
    "ALTER TABLE ticket ADD COLUMN x",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "COMMIT",
    "END",
    "SAVEPOINT s",
    "SELECT load_extension('x')",
    "EXPLAIN DELETE FROM ticket",
    "SELECT 1 WHERE ?1",
    "SELECT :name",
    "SELECT 'unterminated",
    'SELECT "unterminated',
    "SELECT [unterminated",
    "SELECT x'abc'",
    "SELECT 1\x00; DELETE FROM ticket",
    "SELECT 1 \\ 2",
    "",
    "  -- only a comment\n",
]

READS = [
    "SELECT state FROM ticket WHERE id = 1",
    "select count(*) from ticket;",
    "SELECT 1;  -- trailing comment",
    "  /* lead */ SELECT 1",
    "WITH x AS MATERIALIZED (SELECT 1 AS a) SELECT a FROM x",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT sum(n) FROM c",
    "VALUES (1), (2)",
    "SELECT replace(state, 'o', '0') FROM ticket",
    "SELECT REPLACE (state, 'o', '0') FROM ticket",
    "SELECT 'DELETE FROM ticket; DROP TABLE ticket' AS text",
    "SELECT 'it''s'",
    'SELECT "state" FROM "ticket"',
    "SELECT [state] FROM [ticket]",
    "SELECT `state` FROM `ticket`",
    'SELECT 1 AS "update", 2 AS [delete], 3 AS `insert`',
    "SELECT t.state FROM ticket AS t WHERE t.state <> 'x' AND t.id IN (1, 2)",
    "SELECT x'0A1b', 1.5e3, .5, 0x1F, -1",
    "SELECT COALESCE(updated_at, 'none') || '!' FROM ticket ORDER BY id DESC LIMIT 1 OFFSET 0",
    "SELECT CASE WHEN priority > 2 THEN 'high' ELSE 'low' END FROM ticket",
    "SELECT datetime('now', '-1 day') > updated_at FROM ticket",
    "SELECT id FROM ticket WHERE state LIKE '%o%' ESCAPE '\\'",
    "SELECT café FROM (SELECT 1 AS café)",
]


@pytest.mark.parametrize("query", WRITES)
def test_writes_and_ambiguities_are_refused(query: str) -> None:
    assert read_only_problem(query) is not None


@pytest.mark.parametrize("query", READS)
def test_reads_are_accepted_and_run(query: str, tmp_path: Path) -> None:
    assert read_only_problem(query) is None
    with sqlite3.connect(make_db(tmp_path / "r.sqlite")) as connection:
        connection.execute(query).fetchall()  # each is valid SQLite


def test_the_issue_examples_are_refused_for_the_right_reason() -> None:
    assert "INSERT" in (read_only_problem(WRITES[0]) or "")
    assert "REPLACE" in (read_only_problem(WRITES[2]) or "")
    assert "2 statements" in (read_only_problem("SELECT '\\'; DELETE FROM t; --'") or "")
    assert "parameter or variable" in (read_only_problem("SELECT $$; DELETE FROM t; $$") or "")


def test_queries_over_sqlparse_limits_are_checked() -> None:
    in_list = "SELECT id FROM ticket WHERE id IN (" + ", ".join(map(str, range(6000))) + ")"
    assert read_only_problem(in_list) is None
    nested = "SELECT " + "(" * 150 + "1" + ")" * 150
    assert read_only_problem(nested) is None
    many = "SELECT " + " + ".join(["1"] * 20_000)
    assert read_only_problem(many) is None
    assert read_only_problem(in_list + "; DELETE FROM ticket") is not None


async def test_big_valid_queries_verify_in_strict(tmp_path: Path) -> None:
    in_list = "SELECT count(*) FROM ticket WHERE id IN (" + ", ".join(map(str, range(6000))) + ")"
    nested = "SELECT " + "(" * 90 + "2" + ")" * 90  # SQLite's own parser stops near 100
    with SqliteSqlRunner({"gym-a": make_db(tmp_path / "a.sqlite")}) as runner:
        verdict = await verify_task(
            task_with(check(in_list, 2, name="a"), check(nested, 2, name="b")),
            sql=runner,
            policy=STRICT,
        )
    assert verdict.success, verdict.results


def ticket_rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT * FROM ticket ORDER BY id").fetchall()


def writes_that_sqlite_runs() -> list[str]:
    return [q for q in WRITES[:7] + WRITES[11:17] if "$" not in q]


async def test_strict_refuses_writes_before_they_reach_a_writable_connection(
    tmp_path: Path,
) -> None:
    path = make_db(tmp_path / "w.sqlite")
    before = ticket_rows(path)
    connection = sqlite3.connect(path, check_same_thread=False)
    task = task_with(*(check(q, 1, name=f"w{i}") for i, q in enumerate(writes_that_sqlite_runs())))
    with SqliteSqlRunner({"gym-a": connection}, read_only=False) as runner:  # would write if asked
        verdict = await verify_task(task, sql=runner, policy=STRICT)
    assert all(
        r.failure_kind == "config_error" and "refused" in (r.error or "") for r in verdict.results
    )
    connection.commit()
    assert ticket_rows(path) == before


@pytest.mark.parametrize("lent", [False, True], ids=["file", "lent-connection"])
async def test_the_authorizer_stops_writes_the_text_check_never_sees(
    tmp_path: Path, lent: bool
) -> None:
    # PARITY skips the text check; our runner still refuses every write.
    path = make_db(tmp_path / "w.sqlite")
    before = ticket_rows(path)
    source: Path | sqlite3.Connection = sqlite3.connect(path) if lent else path
    task = task_with(*(check(q, 1, name=f"w{i}") for i, q in enumerate(writes_that_sqlite_runs())))
    with SqliteSqlRunner({"gym-a": source}) as runner:
        verdict = await verify_task(task, sql=runner, policy=PARITY)
        ok = await runner.run_sql("gym-a", None, "SELECT count(*) AS n FROM ticket", {})
    assert not any(r.passed for r in verdict.results)
    assert all("SQL query failed" in (r.error or "") for r in verdict.results), verdict.results
    assert ok.body == {"data": [{"n": 2}]}  # the connection is usable afterwards
    if isinstance(source, sqlite3.Connection):
        writes_again(source)
    assert ticket_rows(path) == before


def writes_again(connection: sqlite3.Connection) -> None:
    """The runner removed its hooks: the lender's connection writes again."""
    connection.execute("UPDATE ticket SET state = 'x' WHERE id = 2")
    assert connection.total_changes == 1
    connection.rollback()


def test_every_real_verifier_query_is_accepted(eog_data: Path) -> None:
    tasks = load_tasks(eog_data / "tasks") + load_tasks(eog_data / "nemo-rows")
    queries = {
        v.validation_config.query
        for t in tasks
        for v in t.verifiers
        if isinstance(v, DatabaseStateVerifier) and v.validation_config.query
    }
    assert len(queries) > 90
    refused = {q: read_only_problem(q) for q in queries if read_only_problem(q)}
    assert refused == {}


def test_demo_task_queries_are_accepted() -> None:
    from eog_core.local import demo_paths

    task = load_task(demo_paths().task)
    assert all(
        read_only_problem(v.validation_config.query or "") is None
        for v in task.verifiers
        if isinstance(v, DatabaseStateVerifier)
    )
