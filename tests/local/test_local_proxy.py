"""FaultProxy in front of a real LocalGym: each fault, judged by the gym's own ledger."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from eog_core.local import Fault, FaultProxy, LocalGym

from .conftest import SCHEMA, McpTestClient

DB = {"x-database-id": "db_1"}
ADD = {"name": "once", "qty": 1}


@pytest.fixture
async def proxy(gym: LocalGym) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(upstream=gym.url, delay=0.5, seed=7) as running:
        yield running


@pytest.fixture
async def client(
    gym: LocalGym, proxy: FaultProxy, http: aiohttp.ClientSession, seed: Any
) -> McpTestClient:
    await seed(gym, "db_1")
    mcp = McpTestClient(http, proxy.url + gym.mcp_path)
    await mcp.initialize()
    return mcp


def executions(gym: LocalGym) -> int:
    return gym.ledger.tool_executions


async def test_clean_requests_pass_through(
    gym: LocalGym, proxy: FaultProxy, client: McpTestClient
) -> None:
    result = await client.call_tool("add_item", ADD, **DB)
    assert result["isError"] is False
    assert executions(gym) == 1
    assert proxy.injected == {}
    assert proxy.requests == 3  # initialize, initialized, tools/call


@pytest.mark.parametrize(
    ("fault", "error", "executed"),
    [
        (Fault.DROP_BEFORE, aiohttp.ServerDisconnectedError, 0),
        (Fault.DROP_AFTER, aiohttp.ServerDisconnectedError, 1),
        (Fault.CUT_AFTER, aiohttp.ClientPayloadError, 1),
    ],
)
async def test_lost_answers(
    gym: LocalGym,
    proxy: FaultProxy,
    client: McpTestClient,
    fault: Fault,
    error: type[Exception],
    executed: int,
) -> None:
    proxy.inject(fault)
    with pytest.raises(error):
        await client.call_tool("add_item", ADD, **DB)
    assert executions(gym) == executed
    assert gym.query("db_1", "SELECT COUNT(*) AS n FROM item WHERE name = 'once'") == [
        {"n": executed}
    ]
    assert proxy.injected == {fault: 1}


@pytest.mark.parametrize(("fault", "executed"), [(Fault.FAIL_BEFORE, 0), (Fault.FAIL_AFTER, 1)])
async def test_5xx_before_and_after_forwarding(
    gym: LocalGym, proxy: FaultProxy, client: McpTestClient, fault: Fault, executed: int
) -> None:
    proxy.inject(fault, path=gym.mcp_path)
    message = {
        "jsonrpc": "2.0",
        "id": 99,
        "method": "tools/call",
        "params": {"name": "add_item", "arguments": ADD},
    }
    status, _, body = await client.post(message, DB)
    assert 500 <= status <= 599
    assert "Injected fault" in body[0]["detail"]
    assert executions(gym) == executed


async def test_delay_past_the_client_timeout_still_executes(
    gym: LocalGym, proxy: FaultProxy, http: aiohttp.ClientSession
) -> None:
    proxy.inject(Fault.DELAY, path="/api/seed-database")
    body = {"database_id": "db_late", "sql_content": SCHEMA}
    with pytest.raises(TimeoutError):
        await http.post(
            f"{proxy.url}/api/seed-database", json=body, timeout=aiohttp.ClientTimeout(total=0.05)
        )
    assert proxy.in_flight == 1
    async with asyncio.timeout(30):
        await proxy.drain()
    # The client gave up long ago; the seed landed anyway.
    assert gym.database_ids() == ["db_late"]
    assert gym.ledger.seeds == {"db_late": 1}


async def test_unreachable_upstream_is_a_502(http: aiohttp.ClientSession) -> None:
    gym = LocalGym()
    async with gym:
        url = gym.url
    async with FaultProxy(upstream=url) as proxy, http.get(f"{proxy.url}/health") as response:
        assert response.status == 502
        assert "Bad Gateway" in (await response.json())["detail"]


async def test_random_faults_follow_rate_kinds_and_paths(
    gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    async with FaultProxy(
        upstream=gym.url, rate=1.0, faults=[Fault.FAIL_BEFORE], paths=["/health"], seed=1
    ) as proxy:
        for _ in range(5):
            async with http.get(f"{proxy.url}/health") as response:
                assert response.status >= 500
        async with http.post(f"{proxy.url}/api/sql-runner", json={}) as response:
            assert response.status == 400  # another path: the gym's own answer
        assert proxy.injected == {Fault.FAIL_BEFORE: 5}
        proxy.set_rate(0.5, [Fault.FAIL_BEFORE, Fault.FAIL_AFTER])
        for _ in range(40):
            async with http.get(f"{proxy.url}/health"):
                pass
        faulted = sum(proxy.injected.values()) - 5
        assert 0 < faulted < 40
        assert set(proxy.injected) == {Fault.FAIL_BEFORE, Fault.FAIL_AFTER}
        proxy.clear()
        async with http.get(f"{proxy.url}/health") as response:
            assert response.status == 200


def test_proxy_arguments_are_checked() -> None:
    proxy = FaultProxy(upstream="http://127.0.0.1:1/")
    assert proxy.upstream == "http://127.0.0.1:1"
    with pytest.raises(ValueError, match="rate"):
        proxy.set_rate(1.5)
    with pytest.raises(ValueError, match="fault kind"):
        proxy.set_rate(0.5, [])
    with pytest.raises(ValueError, match="count"):
        proxy.inject(Fault.DELAY, 0)
    with pytest.raises(RuntimeError, match="not running"):
        _ = proxy.url
    assert [f for f in Fault if f.reaches_gym] == [
        Fault.DELAY,
        Fault.DROP_AFTER,
        Fault.CUT_AFTER,
        Fault.FAIL_AFTER,
    ]


async def test_faults_aimed_at_one_json_rpc_method(
    gym: LocalGym, proxy: FaultProxy, client: McpTestClient
) -> None:
    proxy.inject(Fault.FAIL_AFTER, method="tools/call")
    assert (await client.rpc("tools/list"))["result"]["tools"]  # another method: untouched
    message = {
        "jsonrpc": "2.0",
        "id": 98,
        "method": "tools/call",
        "params": {"name": "add_item", "arguments": ADD},
    }
    status, _, _ = await client.post(message, DB)
    assert status >= 500
    assert executions(gym) == 1
    assert proxy.faulted_methods == {(Fault.FAIL_AFTER, "tools/call"): 1}
