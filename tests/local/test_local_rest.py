"""REST surface of LocalGym: seed, sql-runner, delete, health, lifecycle."""

from __future__ import annotations

import io
import json
from typing import Any

import aiohttp
import pytest

from eog_core.local import LocalGym


async def post_json(
    http: aiohttp.ClientSession, url: str, body: Any, **headers: str
) -> tuple[int, Any]:
    async with http.post(url, json=body, headers=headers) as response:
        return response.status, await response.json()


async def test_health(gym: LocalGym, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{gym.url}/health") as response:
        assert response.status == 200
        body = await response.json()
    assert body["status"] == "ok"
    assert body["name"] == "test-gym"
    assert gym.request_counts == {"/health": 1}


async def test_seed_then_query_survives_across_requests(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_a")
    assert gym.database_ids() == ["db_a"]
    status, body = await post_json(
        http,
        f"{gym.url}/api/sql-runner",
        {"query": "UPDATE item SET qty = qty + 1 WHERE name = 'bolt'", "database_id": "db_a"},
        **{"x-database-id": "db_a"},
    )
    query = "UPDATE item SET qty = qty + 1 WHERE name = 'bolt'"  # no SELECT: never capped
    assert (status, body) == (200, {"data": [], "query": query})
    status, body = await post_json(
        http,
        f"{gym.url}/api/sql-runner",
        {"query": "SELECT name, qty FROM item ORDER BY id", "database_id": "db_a"},
    )
    assert status == 200
    assert body == {
        "data": [{"name": "bolt", "qty": 11}, {"name": "nut", "qty": 20}],
        "query": "SELECT name, qty FROM item ORDER BY id LIMIT 100",
    }
    assert gym.query("db_a", "SELECT COUNT(*) AS n FROM item") == [{"n": 2}]


async def test_sql_runner_takes_database_id_from_header(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_h")
    status, body = await post_json(
        http, f"{gym.url}/api/sql-runner", {"query": "SELECT 1 AS one"}, **{"x-database-id": "db_h"}
    )
    assert (status, body) == (200, {"data": [{"one": 1}], "query": "SELECT 1 AS one LIMIT 100"})


async def test_databases_are_isolated(gym: LocalGym, seed: Any) -> None:
    await seed(gym, "db_1")
    await seed(gym, "db_2")
    gym.query("db_1", "DELETE FROM item")
    assert gym.query("db_1", "SELECT COUNT(*) AS n FROM item") == [{"n": 0}]
    assert gym.query("db_2", "SELECT COUNT(*) AS n FROM item") == [{"n": 2}]


@pytest.mark.parametrize(
    ("body", "status", "detail_part"),
    [
        ({"name": "x", "description": "x", "sql_content": "SELECT 1;"}, 400, "database_id"),
        ({"database_id": "db_x", "name": "x"}, 400, "sql_content"),
        ({"database_id": "db_x", "sql_content": "CREATE TABLE (oops"}, 400, "Failed to seed"),
        ([1, 2], 400, "JSON object"),
    ],
)
async def test_seed_errors(
    gym: LocalGym, http: aiohttp.ClientSession, body: Any, status: int, detail_part: str
) -> None:
    got_status, got = await post_json(http, f"{gym.url}/api/seed-database", body)
    assert got_status == status
    assert detail_part in got["detail"]
    assert gym.database_ids() == []


async def test_seed_accepts_large_dumps(gym: LocalGym, http: aiohttp.ClientSession) -> None:
    rows = ",".join(f"('{'x' * 100}{index}', {index})" for index in range(30_000))
    sql = f"CREATE TABLE item (name TEXT, qty INTEGER); INSERT INTO item VALUES {rows};"
    assert len(sql) > 3 * 1024 * 1024
    payload = json.dumps({"database_id": "db_big", "sql_content": sql}).encode()
    # A file object, not bytes: aiohttp warns about large in-memory bodies.
    async with http.post(
        f"{gym.url}/api/seed-database",
        data=io.BytesIO(payload),
        headers={"Content-Type": "application/json"},
    ) as response:
        assert response.status == 200
    assert gym.query("db_big", "SELECT COUNT(*) AS n FROM item") == [{"n": 30_000}]


async def test_seed_rejects_malformed_json(gym: LocalGym, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{gym.url}/api/seed-database", data=b"{nope") as response:
        assert response.status == 400
        assert "detail" in await response.json()


async def test_seed_twice_is_a_conflict(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_dup")
    status, body = await post_json(
        http, f"{gym.url}/api/seed-database", {"database_id": "db_dup", "sql_content": "SELECT 1;"}
    )
    assert status == 409
    assert body == {"detail": "Database already exists: db_dup"}
    assert gym.query("db_dup", "SELECT COUNT(*) AS n FROM item") == [{"n": 2}]


async def test_sql_runner_errors(gym: LocalGym, http: aiohttp.ClientSession, seed: Any) -> None:
    await seed(gym, "db_e")
    url = f"{gym.url}/api/sql-runner"
    status, body = await post_json(
        http, url, {"query": "SELECT * FROM missing", "database_id": "db_e"}
    )
    assert (status, body) == (400, {"detail": "no such table: missing"})
    status, body = await post_json(http, url, {"query": "SELECT 1", "database_id": "db_nope"})
    assert (status, body) == (404, {"detail": "Database not found: db_nope"})
    status, body = await post_json(http, url, {"database_id": "db_e"})
    assert status == 400
    assert "query" in body["detail"]
    status, body = await post_json(http, url, {"query": "SELECT 1"})
    assert status == 400
    assert "database_id" in body["detail"]


async def test_failed_statement_is_rolled_back(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_r")
    status, _ = await post_json(
        http,
        f"{gym.url}/api/sql-runner",
        {"query": "INSERT INTO item (name, qty) VALUES ('x', NULL)", "database_id": "db_r"},
    )
    assert status == 400
    assert gym.query("db_r", "SELECT COUNT(*) AS n FROM item") == [{"n": 2}]


async def test_delete_database(gym: LocalGym, http: aiohttp.ClientSession, seed: Any) -> None:
    await seed(gym, "db_d")
    url = f"{gym.url}/api/delete-database"
    async with http.delete(url, json={"database_id": "db_d"}) as response:
        assert response.status == 200
    assert gym.database_ids() == []
    async with http.delete(url, json={"database_id": "db_d"}) as response:
        assert response.status == 404
        assert await response.json() == {"detail": "Database not found: db_d"}
    async with http.delete(url) as response:
        assert response.status == 400


async def test_lifecycle_start_stop_is_clean_and_idempotent(http: aiohttp.ClientSession) -> None:
    gym = LocalGym()
    with pytest.raises(RuntimeError):
        _ = gym.url
    await gym.start()
    url = gym.url
    assert url.startswith("http://127.0.0.1:")
    with pytest.raises(RuntimeError):
        await gym.start()
    await gym.stop()
    await gym.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        async with http.get(f"{url}/health"):
            pass


async def test_stop_drops_databases(seed: Any) -> None:
    gym = LocalGym()
    async with gym:
        await seed(gym, "db_s")
        assert gym.database_ids() == ["db_s"]
    assert gym.database_ids() == []


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="response_mode"):
        LocalGym(response_mode="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mcp_path"):
        LocalGym(mcp_path="mcp")
