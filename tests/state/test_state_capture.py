"""State snapshots of real LocalGym databases through ``/api/sql-runner`` (docs/state.md)."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator

import pytest

from eog_core import Task, load_task
from eog_core.errors import StateError
from eog_core.gym import GymDirectory, TaskSession
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from eog_core.local.demo import DEMO_SERVER_NAME
from eog_core.state import (
    STATE_FORMAT,
    canonical_bytes,
    snapshot,
    state_id,
    table_state,
)

PATHS = demo_paths()

EDGE_SEED = """
CREATE TABLE "case" (id INTEGER PRIMARY KEY, title TEXT, weight REAL, payload BLOB);
CREATE TABLE pair (b TEXT, a INTEGER, note TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE loose (x, y);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150)
INSERT INTO "case" SELECT 151 - i, 'case ' || (151 - i), (151 - i) / 10.0, NULL FROM n;
UPDATE "case" SET payload = x'00ff10', weight = 0.1 WHERE id = 1;
UPDATE "case" SET weight = 9e999 WHERE id = 2;
UPDATE "case" SET weight = -9e999 WHERE id = 3;
INSERT INTO pair VALUES ('z', 2, 'second'), ('a', 2, 'first'), ('q', 1, 'zeroth');
INSERT INTO loose VALUES (2, 'b'), (1, 'a'), (1, 'a');
"""


@pytest.fixture
async def capped_gym() -> AsyncIterator[LocalGym]:
    """A gym that caps LIMIT-less SQL-runner queries at 100 rows, as the real gym does."""
    async with LocalGym.demo(implicit_limit=100) as server:
        yield server


@pytest.fixture
def task() -> Task:
    return load_task(PATHS.task)


async def test_the_demo_state_before_and_after_the_correct_trajectory(
    capped_gym: LocalGym, task: Task
) -> None:
    async with TaskSession.start(
        task, directory=GymDirectory({capped_gym.name: capped_gym.url}), seed_root=PATHS.directory
    ) as session:
        before = await snapshot(session)
        for step in load_demo_trajectory():
            await session.call_tool(step["name"], step["arguments"])
        after = await snapshot(session)
    assert before.document["format"] == STATE_FORMAT
    assert list(before.document["gyms"]) == [DEMO_SERVER_NAME]
    assert before.database_ids == dict(session.database_ids)
    assert before.id == state_id(before.document) == state_id(json.loads(before.data))
    assert before.id != after.id  # the trajectory wrote
    tables = before.document["gyms"][DEMO_SERVER_NAME]["tables"]
    assert tables and all(t["rows"] for t in tables.values())
    for table in tables.values():  # ordered by key, columns as the DDL gives them
        assert all(list(row) == table["columns"] for row in table["rows"])
        if table["primary_key"]:
            keys = [tuple(row[c] for c in table["primary_key"]) for row in table["rows"]]
            assert keys == sorted(keys)


async def test_two_fresh_seeds_are_one_state(capped_gym: LocalGym, task: Task) -> None:
    directory = GymDirectory({capped_gym.name: capped_gym.url})
    async with (
        TaskSession.start(task, directory=directory, seed_root=PATHS.directory) as first,
        TaskSession.start(task, directory=directory, seed_root=PATHS.directory) as second,
    ):
        assert first.database_ids != second.database_ids
        one, other = await snapshot(first), await snapshot(second)
    assert one.id == other.id and one.data == other.data


async def test_quoted_names_blobs_floats_composite_keys_past_the_gyms_cap(
    capped_gym: LocalGym, task: Task
) -> None:
    async with TaskSession.start(
        task,
        directory=GymDirectory({capped_gym.name: capped_gym.url}),
        seed_sql={DEMO_SERVER_NAME: EDGE_SEED},
    ) as session:
        capped = await session.sql_runner().run_sql(
            DEMO_SERVER_NAME, session.database_ids[DEMO_SERVER_NAME], 'SELECT * FROM "case"', {}
        )
        state = await snapshot(session)
    assert len(capped.body["data"]) == 100  # the gym's own cap, which the export's LIMIT avoids
    tables = state.document["gyms"][DEMO_SERVER_NAME]["tables"]
    assert sorted(tables) == ["case", "loose", "pair"]
    case = tables["case"]
    assert case["columns"] == ["id", "title", "weight", "payload"]
    assert case["primary_key"] == ["id"]
    assert [row["id"] for row in case["rows"]] == list(range(1, 151))
    assert case["rows"][0] == {
        "id": 1,
        "title": "case 1",
        "weight": 0.1,
        "payload": {"$base64": "AP8Q"},
    }
    assert case["rows"][1]["weight"] == {"$float": "inf"}
    assert case["rows"][2]["weight"] == {"$float": "-inf"}
    assert case["rows"][9]["weight"] == 1.0 and isinstance(case["rows"][9]["weight"], float)
    assert b'"weight":0.1}' in state.data  # repr, not 0.10000000000000001
    pair = tables["pair"]
    assert pair["primary_key"] == ["a", "b"]  # key order, not column order
    assert [(r["a"], r["b"]) for r in pair["rows"]] == [(1, "q"), (2, "a"), (2, "z")]
    loose = tables["loose"]
    assert loose["primary_key"] == []
    assert [(r["x"], r["y"]) for r in loose["rows"]] == [(1, "a"), (1, "a"), (2, "b")]


async def test_a_table_past_max_rows_is_an_error_naming_gym_and_table(
    capped_gym: LocalGym, task: Task
) -> None:
    async with TaskSession.start(
        task,
        directory=GymDirectory({capped_gym.name: capped_gym.url}),
        seed_sql={DEMO_SERVER_NAME: EDGE_SEED},
    ) as session:
        assert (await snapshot(session, max_rows=150)).document  # exactly the bound: whole
        with pytest.raises(StateError, match=r"table 'case' holds more than 149 rows") as caught:
            await snapshot(session, max_rows=149)
    assert (caught.value.gym, caught.value.table) == (DEMO_SERVER_NAME, "case")


def test_equal_tables_in_any_row_order_have_one_id() -> None:
    rows = [{"k": 2, "v": "b"}, {"k": 1, "v": "a"}, {"k": 10, "v": None}]
    one = table_state(["k", "v"], ["k"], rows)
    other = table_state(["k", "v"], ["k"], list(reversed(rows)))
    assert [r["k"] for r in one["rows"]] == [1, 2, 10]  # numbers, not text, order
    assert state_id({"t": one}) == state_id({"t": other})
    assert state_id({"t": one}) != state_id({"t": table_state(["k", "v"], ["k"], rows[:2])})


def test_mixed_types_order_as_sqlite_orders_them() -> None:
    rows = [{"k": b"\x01"}, {"k": "a"}, {"k": 2.5}, {"k": None}, {"k": 1}]
    ordered = table_state(["k"], ["k"], rows)["rows"]
    assert [r["k"] for r in ordered] == [None, 1, 2.5, "a", {"$base64": "AQ=="}]


def test_non_finite_floats_and_lone_surrogates_have_one_byte_form() -> None:
    table = table_state(["v"], [], [{"v": math.nan}, {"v": "\ud800x"}])
    data = canonical_bytes({"t": table})
    data.decode("utf-8")  # valid UTF-8
    assert b'{"$float":"nan"}' in data and b'"\\ud800x"' in data
    assert json.loads(data)["t"]["rows"][0]["v"] == "\ud800x"  # the escape reads back to it
