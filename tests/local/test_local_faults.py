"""Fault knobs of LocalGym: latency, injected failures, dropped connections, counters."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from eog_core.local import LocalGym

DB = {"x-database-id": "db_1"}


async def health_status(http: aiohttp.ClientSession, gym: LocalGym) -> int:
    async with http.get(f"{gym.url}/health") as response:
        return response.status


async def test_latency_delays_every_request(gym: LocalGym, http: aiohttp.ClientSession) -> None:
    loop = asyncio.get_running_loop()
    gym.set_latency(0.15)
    started = loop.time()
    assert await health_status(http, gym) == 200
    assert loop.time() - started >= 0.15
    gym.set_latency(0)
    with pytest.raises(ValueError, match="negative"):
        gym.set_latency(-1)


async def test_fail_next_answers_the_status_then_recovers(
    gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    gym.fail_next(2, 503)
    assert gym.pending_faults == 2
    for _ in range(2):
        async with http.get(f"{gym.url}/health") as response:
            assert response.status == 503
            assert "Injected fault" in (await response.json())["detail"]
    assert await health_status(http, gym) == 200
    assert gym.pending_faults == 0
    assert gym.request_counts == {"/health": 3}


async def test_fail_next_for_one_path_only(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_1")
    gym.fail_next(1, 500, path="/api/sql-runner", detail="database is on fire")
    assert await health_status(http, gym) == 200
    body = {"query": "SELECT 1 AS one", "database_id": "db_1"}
    async with http.post(f"{gym.url}/api/sql-runner", json=body) as response:
        assert response.status == 500
        assert await response.json() == {"detail": "database is on fire"}
    async with http.post(f"{gym.url}/api/sql-runner", json=body) as response:
        assert response.status == 200


async def test_failed_seed_does_not_create_the_database(
    gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    gym.fail_next(1, 502, path="/api/seed-database")
    body = {"database_id": "db_f", "sql_content": "CREATE TABLE t (x);"}
    async with http.post(f"{gym.url}/api/seed-database", json=body) as response:
        assert response.status == 502
    assert gym.database_ids() == []


async def test_drop_next_closes_without_answering(
    gym: LocalGym, http: aiohttp.ClientSession, seed: Any
) -> None:
    await seed(gym, "db_1")
    gym.drop_next(1)
    body = {"query": "SELECT 1 AS one", "database_id": "db_1"}
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.post(f"{gym.url}/api/sql-runner", json=body):
            pass
    async with http.post(f"{gym.url}/api/sql-runner", json=body) as response:
        assert response.status == 200


async def test_dropped_get_is_retried_by_aiohttp(
    gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    # aiohttp re-sends an idempotent request once after a disconnect: the gym sees two.
    gym.drop_next(1)
    assert await health_status(http, gym) == 200
    assert gym.request_counts == {"/health": 2}


async def test_drop_next_for_one_path_only(
    gym: LocalGym, mcp: Any, http: aiohttp.ClientSession
) -> None:
    gym.drop_next(1, path=gym.mcp_path)
    assert await health_status(http, gym) == 200
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await mcp(gym).initialize()
    assert gym.session_ids() == []
    await mcp(gym).initialize()


async def test_drop_after_tool_call_executes_exactly_once(
    mode_gym: LocalGym, mcp: Any, seed: Any
) -> None:
    await seed(mode_gym, "db_1")
    client = mcp(mode_gym)
    mode_gym.drop_next(1, after_tool_call=True)
    await client.initialize()  # not a tool call: not dropped
    assert (await client.rpc("tools/list"))["result"]["tools"]
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await client.call_tool("add_item", {"name": "once", "qty": 1}, **DB)
    # The tool ran and committed although the client never saw the answer.
    assert mode_gym.tool_executions == {"add_item": 1}
    assert mode_gym.query("db_1", "SELECT COUNT(*) AS n FROM item WHERE name = 'once'") == [
        {"n": 1}
    ]
    result = await client.call_tool("list_items", **DB)
    assert result["isError"] is False
    assert mode_gym.pending_faults == 0


async def test_drop_after_tool_call_skips_calls_that_never_ran(
    gym: LocalGym, mcp: Any, seed: Any
) -> None:
    await seed(gym, "db_1")
    client = mcp(gym)
    await client.initialize()
    gym.drop_next(1, after_tool_call=True)
    result = await client.call_tool("list_items")  # no x-database-id: the tool never runs
    assert result["isError"] is True
    assert gym.pending_faults == 1
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await client.call_tool("list_items", **DB)


async def test_clear_faults(gym: LocalGym, http: aiohttp.ClientSession) -> None:
    gym.set_latency(30)
    gym.fail_next(5, 500)
    gym.drop_next(5)
    gym.clear_faults()
    assert gym.pending_faults == 0
    assert await health_status(http, gym) == 200


def test_fault_arguments_are_checked() -> None:
    gym = LocalGym()
    with pytest.raises(ValueError, match="count"):
        gym.fail_next(0)
    with pytest.raises(ValueError, match="status"):
        gym.fail_next(1, 200)
    with pytest.raises(ValueError, match="count"):
        gym.drop_next(0)


async def test_counters_and_reset(gym: LocalGym, mcp: Any, seed: Any) -> None:
    await seed(gym, "db_1")
    client = mcp(gym)
    await client.initialize()
    await client.call_tool("list_items", **DB)
    await client.call_tool("list_items", **DB)
    assert gym.request_counts == {"/api/seed-database": 1, "/mcp": 4}
    assert gym.method_counts == {"initialize": 1, "notifications/initialized": 1, "tools/call": 2}
    assert gym.tool_executions == {"list_items": 2}
    gym.reset_counters()
    assert (gym.request_counts, gym.method_counts, gym.tool_executions) == ({}, {}, {})


async def test_concurrent_requests_under_latency(
    gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    gym.set_latency(0.05)
    statuses = await asyncio.gather(*(health_status(http, gym) for _ in range(20)))
    assert statuses == [200] * 20
