"""TaskSession.verify on a live LocalGym: STRICT never writes, and a runaway query has a deadline."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest

from eog_core import PARITY, STRICT, Task, load_task
from eog_core.gym import GymClient, GymDirectory, TaskSession
from eog_core.local import LocalGym, demo_paths, read_demo_seed
from eog_core.tasks import to_upstream

PATHS = demo_paths()

# Each writes on SQLite when run as given (see test_parity_runs_them_and_they_write).
HOSTILE = {
    "cte_insert": "WITH x AS MATERIALIZED (SELECT 1) INSERT INTO case_comment "
    "SELECT 'cc_x', 'case_001', 'mallory', 'pwned', '2025-01-01' FROM x",
    "cte_replace": "WITH x AS NOT MATERIALIZED (SELECT 1) REPLACE INTO entitlement "
    "SELECT 'ent_002', 'ENT0002002', 'acc_001', 'prod_001', 'premium', 'active', "
    "'2024-07-01', '2099-12-31', '2025-07-01 00:05:00' FROM x",
    "backslash": "SELECT '\\'; DELETE FROM entitlement; --'",
    "dollars": "SELECT $$; DELETE FROM entitlement; $$",
}
TABLES = ("account", "contact", "product", "entitlement", '"case"', "case_comment")


def hostile_task(queries: dict[str, str]) -> Task:
    raw: dict[str, Any] = json.loads(PATHS.task.read_text())
    gym = raw["gym_servers_config"][0]["mcp_server_name"]
    raw["verifiers"] = [
        {
            "verifier_type": "database_state",
            "name": name,
            "gym_name": gym,
            "validation_config": {"query": query, "expected_value": 1, "comparison_type": "equals"},
        }
        for name, query in queries.items()
    ]
    return load_task(raw)


def snapshot(gym: LocalGym, database_id: str) -> dict[str, list[dict[str, Any]]]:
    return {table: gym.query(database_id, f"SELECT * FROM {table} ORDER BY 1") for table in TABLES}


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo(sql_timeout=0.3) as server:
        yield server


def start(task: Task, gym: LocalGym) -> Any:
    return TaskSession.start(
        task, directory=GymDirectory({gym.name: gym.url}), seed_root=PATHS.directory
    )


async def test_strict_refuses_every_hostile_query_and_nothing_changes(gym: LocalGym) -> None:
    async with start(hostile_task(HOSTILE), gym) as session:
        database_id = session.database_ids[gym.name]
        before = snapshot(gym, database_id)
        gym.reset_counters()
        verdict = await session.verify(policy=STRICT)
        assert [r.failure_kind for r in verdict.results] == ["config_error"] * len(HOSTILE)
        assert all((r.error or "").startswith("Verifier query refused") for r in verdict.results)
        assert gym.request_counts.get("/api/sql-runner", 0) == 0  # nothing was sent
        assert snapshot(gym, database_id) == before


async def test_parity_runs_them_and_they_write(gym: LocalGym) -> None:
    # Upstream sends whatever it is given: this is what STRICT prevents.
    writes = {k: HOSTILE[k] for k in ("cte_insert", "cte_replace")}
    async with start(hostile_task(writes), gym) as session:
        database_id = session.database_ids[gym.name]
        before = snapshot(gym, database_id)
        await session.verify(policy=PARITY)
        after = snapshot(gym, database_id)
    assert after["case_comment"] != before["case_comment"]
    assert after["entitlement"] != before["entitlement"]


async def test_strict_asks_the_gym_for_a_read_only_run(gym: LocalGym) -> None:
    # Defence in depth: a write that got past the text check is refused by LocalGym itself.
    async with start(hostile_task({}), gym) as session, GymClient(gym.url, name=gym.name) as client:
        database_id = session.database_ids[gym.name]
        before = snapshot(gym, database_id)
        for query in (HOSTILE["cte_insert"], HOSTILE["cte_replace"], "DELETE FROM entitlement"):
            outcome = await client.run_sql(query, database_id=database_id, read_only=True)
            assert not outcome.success and "not authorized" in (outcome.error or ""), outcome
        assert snapshot(gym, database_id) == before


async def test_runaway_verifier_query_is_a_verifier_error_and_the_gym_stays_healthy(
    gym: LocalGym,
) -> None:
    runaway = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"
    )
    async with start(hostile_task({"runaway": runaway, "fine": "SELECT 1"}), gym) as session:
        verdict = await session.verify(policy=STRICT)
        assert (verdict.success, verdict.evaluation_completed, verdict.failure_kind) == (
            False,
            False,
            "verifier_error",
        )
        assert "deadline" in (verdict.results[0].error or "")
        assert verdict.results[1].passed
        async with GymClient(gym.url, name=gym.name) as client:
            assert await client.health()


async def test_queries_past_sqlparse_limits_verify_on_a_live_gym(gym: LocalGym) -> None:
    # A valid 6,000-item IN list: sqlparse raised SQLParseError out of TaskSession.verify.
    in_list = (
        "SELECT count(*) FROM entitlement WHERE sys_id IN ("
        + ", ".join(f"'ent_{i:03d}'" for i in range(6000))
        + ")"
    )
    with contextlib.closing(sqlite3.connect(":memory:")) as seeded:
        seeded.executescript(read_demo_seed())
        (expected,) = seeded.execute(in_list).fetchone()
    raw = to_upstream(hostile_task({"in_list": in_list}))
    raw["verifiers"][0]["validation_config"]["expected_value"] = expected
    async with start(load_task(raw), gym) as session:
        verdict = await session.verify(policy=STRICT)
    assert expected > 0 and verdict.success, verdict.results
