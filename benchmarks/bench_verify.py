"""Verifier engine throughput: golden parity scoring and verify_task on SQLite.

Run with ``nox -s bench`` (or ``pytest benchmarks``). Targets from issue #2:
parity scoring of the 3,000 golden cases in under 15 ms on one core, and at
least 5,000 verifiers/s through ``verify_task`` with ``SqliteSqlRunner``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from eog_core import PARITY, STRICT, SqliteSqlRunner, SqlOutcome, load_task, verify_task
from eog_core.verify import extract_value, score_database_state, upstream_compare

GOLDEN = json.loads(
    (Path(__file__).parent.parent / "tests" / "golden" / "verifier_parity.json").read_text()
)["cases"]


def score_all_golden() -> int:
    """Parity-score every golden case the way the golden test does; returns the pass count."""
    passed = 0
    for case in GOLDEN:
        kind = case["kind"]
        if kind == "extract":
            extract_value(case["input"], PARITY)
        elif kind == "compare":
            passed += PARITY.compare(
                case["actual"], case["expected"], case["comparison_type"]
            ).passed
        else:
            passed += score_database_state(case["validation_config"], case["sql_outcome"], PARITY)[
                "passed"
            ]
    return passed


def _upstream_style_extract(result: Any) -> Any:
    """Plain functions shaped like upstream's, for a side-by-side floor."""
    if not result:
        return None
    if not result.get("success"):
        return None
    data = result.get("result", {})
    if isinstance(data, dict) and "data" in data:
        rows = data["data"]
        if isinstance(rows, list) and rows:
            if len(rows) == 1 and isinstance(rows[0], dict) and len(rows[0]) == 1:
                return next(iter(rows[0].values()))
            return rows[0] if len(rows) == 1 else rows
        return rows
    return data


def score_all_plain() -> int:
    passed = 0
    for case in GOLDEN:
        kind = case["kind"]
        if kind == "extract":
            _upstream_style_extract(case["input"])
        elif kind == "compare":
            passed += upstream_compare(
                case["actual"], case["expected"], case["comparison_type"]
            ).passed
        else:
            outcome = case["sql_outcome"]
            if case["validation_config"].get("query") and outcome.get("success"):
                actual = _upstream_style_extract(outcome)
                cfg = case["validation_config"]
                passed += upstream_compare(
                    actual, cfg.get("expected_value"), cfg.get("comparison_type", "equals")
                ).passed
    return passed


def test_golden_parity_scoring(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "golden-3000"
    assert benchmark(score_all_golden) > 0


def test_golden_plain_upstream_style_floor(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "golden-3000"
    assert benchmark(score_all_plain) > 0


def _twenty_verifier_task() -> Any:
    verifiers = []
    for i in range(20):
        query = (
            f"SELECT COUNT(*) FROM ticket WHERE id = {i} AND state = 'closed'"
            if i % 2
            else f"SELECT state FROM ticket WHERE id = {i}"
        )
        verifiers.append(
            {
                "verifier_type": "database_state",
                "name": f"v{i}",
                "gym_name": "gym-a",
                "validation_config": {"query": query, "expected_value": 1 if i % 2 else "closed"},
            }
        )
    return load_task(
        {
            "user_prompt": "u",
            "verifiers": verifiers,
            "gym_servers_config": [
                {"mcp_server_name": "gym-a", "mcp_server_url": "http://localhost:8100"}
            ],
        }
    )


def _ticket_db() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    connection.execute("CREATE TABLE ticket (id INTEGER PRIMARY KEY, state TEXT)")
    connection.executemany("INSERT INTO ticket VALUES (?, 'closed')", [(i,) for i in range(2000)])
    return connection


def test_verify_task_twenty_verifiers_sqlite_strict(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "verify_task-20"
    task, runner = _twenty_verifier_task(), SqliteSqlRunner({"gym-a": _ticket_db()})
    loop = asyncio.new_event_loop()
    try:
        verdict = benchmark(
            lambda: loop.run_until_complete(verify_task(task, sql=runner, policy=STRICT))
        )
    finally:
        loop.close()
    assert verdict.success
    benchmark.extra_info["verifiers_per_second"] = 20 / benchmark.stats.stats.mean


def test_verify_task_twenty_verifiers_sqlite_parity(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "verify_task-20"
    task, runner = _twenty_verifier_task(), SqliteSqlRunner({"gym-a": _ticket_db()})
    loop = asyncio.new_event_loop()
    try:
        verdict = benchmark(
            lambda: loop.run_until_complete(verify_task(task, sql=runner, policy=PARITY))
        )
    finally:
        loop.close()
    assert verdict.success
    benchmark.extra_info["verifiers_per_second"] = 20 / benchmark.stats.stats.mean


def test_twenty_raw_sqlite_queries_floor(benchmark: BenchmarkFixture) -> None:
    """The same 20 queries straight through sqlite3: what verify_task costs on top."""
    benchmark.group = "verify_task-20"
    task, connection = _twenty_verifier_task(), _ticket_db()
    queries = [v.validation_config.query for v in task.verifiers]

    def run() -> list[SqlOutcome]:
        return [
            SqlOutcome.ok(
                {
                    "data": [
                        dict(zip([d[0] for d in cur.description], row, strict=True))
                        for row in cur.fetchall()
                    ]
                }
            )
            for cur in (connection.execute(q) for q in queries)
        ]

    assert len(benchmark(run)) == 20
