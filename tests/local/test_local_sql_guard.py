"""LocalGym's SQL runner: off the event loop with a deadline, and read-only when asked."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from eog_core.local import LocalGym

from .conftest import GymFactory, McpTestClient, SeedFn

COUNT = "SELECT count(*) AS n FROM item"
#: LocalGym's answer to COUNT: as a real gym's, it appends LIMIT 100 and echoes the query as run.
COUNTED = (200, {"data": [{"n": 2}], "query": f"{COUNT} LIMIT 100"})
RUNAWAY = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"


async def sql(
    http: aiohttp.ClientSession,
    gym: LocalGym,
    query: str,
    database_id: str = "db_1",
    **headers: str,
) -> tuple[int, Any]:
    async with http.post(
        f"{gym.url}/api/sql-runner",
        json={"query": query, "database_id": database_id},
        headers=headers,
    ) as response:
        return response.status, await response.json()


async def until(condition: Callable[[], bool], limit: float = 60.0) -> None:
    async with asyncio.timeout(limit):
        while not condition():  # noqa: ASYNC110 - the gym offers no event; bounded above
            await asyncio.sleep(0.01)


async def test_health_and_tools_answer_while_a_runaway_query_runs(
    make_gym: GymFactory,
    http: aiohttp.ClientSession,
    seed: SeedFn,
    mcp: Callable[[LocalGym], McpTestClient],
) -> None:
    gym = await make_gym(sql_timeout=600)
    await seed(gym, "db_1")
    await seed(gym, "db_2")
    runaway = asyncio.create_task(sql(http, gym, RUNAWAY))
    await until(lambda: gym.sql_queries_running == 1)
    async with http.get(f"{gym.url}/health") as response:
        assert response.status == 200 and (await response.json())["databases"] == 2
    client = mcp(gym)
    await client.initialize()
    result = await client.call_tool(
        "add_item", {"name": "washer", "qty": 3}, **{"x-database-id": "db_2"}
    )
    assert not result.get("isError"), result
    assert not runaway.done() and gym.sql_queries_running == 1
    async with http.delete(
        f"{gym.url}/api/delete-database", json={"database_id": "db_1"}
    ) as response:
        assert response.status == 200  # deleting interrupts the query first
    status, body = await runaway
    assert (status, body) == (400, {"detail": "query interrupted: it was cancelled"})
    assert gym.sql_queries_running == 0 and gym.database_ids() == ["db_2"]


async def test_runaway_query_ends_at_the_deadline(
    make_gym: GymFactory,
    http: aiohttp.ClientSession,
    seed: SeedFn,
) -> None:
    gym = await make_gym(sql_timeout=0.2)
    await seed(gym)
    status, body = await sql(http, gym, RUNAWAY)
    assert (status, body) == (400, {"detail": "query interrupted: it ran past its 0.2s deadline"})
    assert await sql(http, gym, COUNT) == COUNTED


async def test_one_heavy_call_is_refused_and_releases_the_lock(
    make_gym: GymFactory,
    http: aiohttp.ClientSession,
    seed: SeedFn,
) -> None:
    gym = await make_gym(sql_timeout=0.2)
    await seed(gym)
    status, body = await sql(http, gym, "SELECT length(printf('%.*c', 200000000, 'x')) AS n")
    assert (
        status == 400
    )  # one uninterruptible call: answered at the deadline (or refused as too big)
    assert body in (
        {"detail": "query interrupted: it ran past its 0.2s deadline"},
        {"detail": "string or blob too big"},
    )
    assert await sql(http, gym, "SELECT length(zeroblob(900000000)) AS n") == (
        400,
        {"detail": "string or blob too big"},
    )
    assert await sql(http, gym, COUNT) == COUNTED


async def test_stopping_the_gym_interrupts_running_queries(
    http: aiohttp.ClientSession,
    seed: SeedFn,
) -> None:
    gym = LocalGym(name="stopping", sql_timeout=600)
    await gym.start()
    try:
        await seed(gym)
        runaway = asyncio.create_task(sql(http, gym, RUNAWAY))
        await until(lambda: gym.sql_queries_running == 1)
    finally:
        async with asyncio.timeout(60):
            await gym.stop()
    try:
        answer = await runaway
    except aiohttp.ClientError:  # the connection closed with the server: also fine
        pass
    else:
        assert answer == (400, {"detail": "query interrupted: it was cancelled"})
    assert gym.sql_queries_running == 0


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM item",
        "UPDATE item SET qty = 0",
        "INSERT INTO item (name, qty) VALUES ('x', 1)",
        "WITH x AS MATERIALIZED (SELECT 'y', 2) INSERT INTO item (name, qty) SELECT * FROM x",
        "WITH x AS NOT MATERIALIZED (SELECT 1, 'z', 3) REPLACE INTO item SELECT * FROM x",
        "CREATE TABLE other (a)",
        "DROP TABLE item",
        "PRAGMA user_version = 3",
        "ATTACH DATABASE ':memory:' AS other",
    ],
)
async def test_read_only_header_refuses_every_write(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    seed: SeedFn,
    query: str,
) -> None:
    await seed(gym)
    before = gym.query("db_1", "SELECT * FROM item ORDER BY id")
    status, body = await sql(http, gym, query, **{"x-eog-read-only": "1"})
    assert status == 400 and body["detail"].startswith("not authorized"), body
    assert gym.query("db_1", "SELECT * FROM item ORDER BY id") == before
    assert gym.query("db_1", "PRAGMA user_version") == [{"user_version": 0}]
    assert await sql(http, gym, COUNT, **{"x-eog-read-only": "true"}) == COUNTED


async def test_without_the_header_the_runner_writes_as_real_gyms_do(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    seed: SeedFn,
) -> None:
    await seed(gym)
    delete = "DELETE FROM item WHERE name = 'nut'"
    assert await sql(http, gym, delete) == (200, {"data": [], "query": delete})
    assert gym.query("db_1", "SELECT name FROM item") == [{"name": "bolt"}]


def test_sql_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sql_timeout"):
        LocalGym(sql_timeout=0)
