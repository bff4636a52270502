"""The real sql-runner's silent ``LIMIT 100``: the rule, offline capping, strict's truncation check."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eog_core import PARITY, STRICT, SqliteSqlRunner, load_task, verify_task
from eog_core.verify import GYM_IMPLICIT_LIMIT, apply_implicit_limit, implicit_limit_of


@pytest.mark.parametrize(
    ("query", "as_run"),
    [
        ("SELECT id FROM item", "SELECT id FROM item LIMIT 100"),
        ("SELECT id FROM item;", "SELECT id FROM item LIMIT 100;"),
        ("SELECT id FROM item -- all\n", "SELECT id FROM item LIMIT 100 -- all\n"),
        ("SELECT id FROM item LIMIT 5", None),
        ("select id from item limit 5 offset 2", None),
        (
            "SELECT * FROM (SELECT id FROM item LIMIT 5)",
            "SELECT * FROM (SELECT id FROM item LIMIT 5) LIMIT 100",
        ),
        (
            "WITH t AS (SELECT id FROM item LIMIT 3) SELECT * FROM t",
            "WITH t AS (SELECT id FROM item LIMIT 3) SELECT * FROM t LIMIT 100",
        ),
        ("SELECT 'LIMIT 5' AS s FROM item", "SELECT 'LIMIT 5' AS s FROM item LIMIT 100"),
        ('SELECT "limit" FROM item', 'SELECT "limit" FROM item LIMIT 100'),
        ("SELECT item.limit FROM item", "SELECT item.limit FROM item LIMIT 100"),
        ("SELECT id FROM item /* LIMIT 5 */", "SELECT id FROM item LIMIT 100 /* LIMIT 5 */"),
        ("UPDATE item SET qty = 1", None),
        ("DELETE FROM item", None),
        ("VALUES (1), (2)", None),
        ("SELECT 1; SELECT 2", None),
        ("SELECT 'open", None),
    ],
)
def test_apply_implicit_limit_reads_the_outermost_statement(query: str, as_run: str | None) -> None:
    assert apply_implicit_limit(query) == (query if as_run is None else as_run)


def item_db(path: Path, rows: int) -> Path:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE item (id INTEGER PRIMARY KEY)")
        connection.executemany("INSERT INTO item VALUES (?)", [(i,) for i in range(rows)])
    return path


def ids_task(query: str, expected: Any) -> Any:
    return load_task(
        {
            "user_prompt": "list the items",
            "gym_servers_config": [
                {"mcp_server_name": "gym-a", "mcp_server_url": "http://localhost:8100"}
            ],
            "verifiers": [
                {
                    "verifier_type": "database_state",
                    "name": "items",
                    "gym_name": "gym-a",
                    "validation_config": {
                        "query": query,
                        "expected_value": expected,
                        "comparison_type": "equals",
                    },
                }
            ],
        }
    )


async def test_sqlite_runner_caps_like_the_gym_and_echoes_the_query(tmp_path: Path) -> None:
    path = item_db(tmp_path / "a.sqlite", 150)
    with SqliteSqlRunner({"gym-a": path}, implicit_limit=GYM_IMPLICIT_LIMIT) as capped:
        assert implicit_limit_of(capped) == 100
        outcome = await capped.run_sql("gym-a", None, "SELECT id FROM item", {})
        assert len(outcome.body["data"]) == 100
        assert outcome.body["query"] == "SELECT id FROM item LIMIT 100"
        own = await capped.run_sql("gym-a", None, "SELECT id FROM item LIMIT 120", {})
        assert len(own.body["data"]) == 120
    with SqliteSqlRunner({"gym-a": path}) as every_row:
        assert implicit_limit_of(every_row) is None
        outcome = await every_row.run_sql("gym-a", None, "SELECT id FROM item", {})
        assert len(outcome.body["data"]) == 150
    with pytest.raises(Exception, match="implicit_limit"):
        SqliteSqlRunner({"gym-a": path}, implicit_limit=-1)


async def test_strict_calls_exactly_100_limitless_rows_a_verifier_error(tmp_path: Path) -> None:
    # 150 rows; the first 100 are what a real gym answers, and what the task expects.
    path = item_db(tmp_path / "a.sqlite", 150)
    expected = [{"id": i} for i in range(100)]
    task = ids_task("SELECT id FROM item ORDER BY id", expected)
    with SqliteSqlRunner({"gym-a": path}, implicit_limit=GYM_IMPLICIT_LIMIT) as capped:
        parity = await verify_task(task, sql=capped, policy=PARITY)
        strict = await verify_task(task, sql=capped, policy=STRICT)
    assert parity.success is True  # upstream passes on the first 100 of 150 rows
    (result,) = strict.results
    assert strict.success is False
    assert result.failure_kind == "verifier_error"
    assert result.error is not None and "possibly truncated by the gym's LIMIT 100" in result.error


async def test_strict_trusts_fewer_rows_or_a_limit_of_its_own(tmp_path: Path) -> None:
    path = item_db(tmp_path / "a.sqlite", 99)
    with SqliteSqlRunner({"gym-a": path}, implicit_limit=GYM_IMPLICIT_LIMIT) as capped:
        short = await verify_task(
            ids_task("SELECT id FROM item", [{"id": i} for i in range(99)]),
            sql=capped,
            policy=STRICT,
        )
    assert short.success is True
    path = item_db(tmp_path / "b.sqlite", 150)
    with SqliteSqlRunner({"gym-a": path}, implicit_limit=GYM_IMPLICIT_LIMIT) as capped:
        own = await verify_task(
            ids_task("SELECT id FROM item ORDER BY id LIMIT 100", [{"id": i} for i in range(100)]),
            sql=capped,
            policy=STRICT,
        )
    assert own.success is True


def test_verify_db_caps_for_parity_and_reads_every_row_for_strict(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = item_db(tmp_path / "final.sqlite", 150)
    task = tmp_path / "task.json"
    task.write_text(
        json.dumps(
            {
                "user_prompt": "list the items",
                "gym_servers_config": [
                    {"mcp_server_name": "gym-a", "mcp_server_url": "http://localhost:8100"}
                ],
                "verifiers": [
                    {
                        "verifier_type": "database_state",
                        "name": "items",
                        "gym_name": "gym-a",
                        "validation_config": {
                            "query": "SELECT COUNT(*) AS n FROM (SELECT id FROM item)",
                            "expected_value": 150,
                            "comparison_type": "equals",
                        },
                    },
                    {
                        "verifier_type": "database_state",
                        "name": "first",
                        "gym_name": "gym-a",
                        "validation_config": {
                            "query": "SELECT id FROM item ORDER BY id",
                            "expected_value": [{"id": i} for i in range(100)],
                            "comparison_type": "equals",
                        },
                    },
                ],
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "eog_core", "verify", str(task), "--db", f"gym-a={path}", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    verdicts = json.loads(done.stdout)
    # parity sees what the gym's sql-runner would have answered: 100 of 150 rows
    assert [r["passed"] for r in verdicts["parity"]["results"]] == [True, True]
    # strict reads the snapshot whole: the list of 150 is not the first 100
    assert [r["passed"] for r in verdicts["strict"]["results"]] == [True, False]
