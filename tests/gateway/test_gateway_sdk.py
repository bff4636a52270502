"""The official MCP SDK client as the agent, through the gateway, on the demo gym."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from eog_core.gateway import Gateway
from eog_core.local import LocalGym, load_demo_trajectory
from eog_core.metrics import read_verdicts
from eog_core.run import ROLLOUTS_FILE, UPSTREAM_DIR, RolloutLog
from tests.gateway.conftest import Records


async def start(http: aiohttp.ClientSession, gateway: Gateway, **body: Any) -> dict[str, Any]:
    async with http.post(f"{gateway.url}/rollouts", json=body) as response:
        assert response.status == 201, await response.text()
        answer: dict[str, Any] = await response.json()
    return answer


async def finish(
    http: aiohttp.ClientSession, gateway: Gateway, rollout_id: str, answer: str
) -> dict[str, Any]:
    async with http.post(
        f"{gateway.url}/rollouts/{rollout_id}/finish", json={"final_answer": answer}
    ) as response:
        assert response.status == 200, await response.text()
        record: dict[str, Any] = await response.json()
    return record


@asynccontextmanager
async def mcp_session(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_sdk_agent_solves_the_demo_task(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession, records: Records
) -> None:
    rollout = await start(http, gateway)
    assert set(rollout) == {
        "rollout_id",
        "task_id",
        "repeat",
        "mcp_url",
        "system_prompt",
        "user_prompt",
    }
    assert (rollout["task_id"], rollout["repeat"]) == (gateway.tasks[0].task_id, 0)
    assert rollout["user_prompt"] == gateway.tasks[0].user_prompt
    assert len(gym.database_ids()) == 1
    async with mcp_session(rollout["mcp_url"]) as agent:
        listed = await agent.list_tools()
        session_tools = gateway.rollouts()[0].session.tools
        assert [t.name for t in listed.tools] == list(session_tools.names)
        for tool in listed.tools:
            spec = session_tools.get(tool.name)
            assert spec is not None
            assert tool.inputSchema == spec.parameters()  # what upstream shows the model
            assert tool.description == spec.description
        assert await agent.send_ping() is not None
        for step in load_demo_trajectory():
            result = await agent.call_tool(step["name"], step["arguments"])
            assert result.isError is False, result.content
    record = await finish(
        http, gateway, rollout["rollout_id"], "Done: renewed and opened the case."
    )
    assert (record["status"], record["success"], record["reward"]) == ("evaluated", True, 1.0)
    assert record["parity"]["success"] is True
    assert record["mcp_client"]["name"] == "mcp"  # the SDK's clientInfo
    assert record["num_tool_calls"] == len(load_demo_trajectory())
    assert record["final_answer"] == "Done: renewed and opened the case."
    assert record["tools_used"] == list(dict.fromkeys(s["name"] for s in load_demo_trajectory()))
    calls = [c for turn in record["turns"] for c in turn["tool_calls"]]
    assert [json.loads(c["arguments"]) for c in calls] == [
        s["arguments"] for s in load_demo_trajectory()
    ]
    assert all(c["gym"] == gym.name and c["latency_ms"] > 0 for c in calls)
    assert gym.database_ids() == []
    # the file: exactly what `run` writes, read back by score and resume
    assert await records.wait_for(1) == [record]
    lines = (gateway.out_dir / ROLLOUTS_FILE).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [record]
    verdicts = list(read_verdicts(gateway.out_dir / ROLLOUTS_FILE))
    assert len(verdicts) == 1 and verdicts[0].success is True
    upstream = list((gateway.out_dir / UPSTREAM_DIR / "run_1").glob("results_*.json"))
    assert len(upstream) == 1
    assert json.loads(upstream[0].read_text())["runs"][0]["overall_success"] is True


async def test_do_nothing_agent_scores_zero_and_leaves_nothing(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    rollout = await start(http, gateway, repeat=1)
    assert rollout["repeat"] == 1
    async with mcp_session(rollout["mcp_url"]) as agent:
        await agent.list_tools()
    record = await finish(http, gateway, rollout["rollout_id"], "")
    assert (record["status"], record["success"], record["reward"]) == ("evaluated", False, 0.0)
    assert record["num_tool_calls"] == 0
    assert gym.database_ids() == []


async def test_unknown_tool_is_an_error_that_never_reaches_the_gym(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    rollout = await start(http, gateway)
    gym.reset_counters()
    async with mcp_session(rollout["mcp_url"]) as agent:
        result = await agent.call_tool("drop_all_tables", {"confirm": True})
        assert result.isError is True
        assert "not available in this task" in json.dumps(result.model_dump(mode="json"))
    assert gym.tool_executions == {}
    assert gym.method_counts.get("tools/call", 0) == 0
    listing = await (await http.get(f"{gateway.url}/rollouts")).json()
    assert listing["rollouts"][0]["refused_tool_calls"] == 1
    record = await finish(http, gateway, rollout["rollout_id"], "")
    assert record["refused_tool_calls"] == 1
    [call] = [c for turn in record["turns"] for c in turn["tool_calls"]]
    assert (call["name"], call["refused"], call["gym"], call["is_error"]) == (
        "drop_all_tables",
        True,
        None,
        True,
    )
    assert gym.database_ids() == []


async def test_resume_hands_out_only_what_is_not_evaluated(
    gym: LocalGym, tmp_path: Any, http: aiohttp.ClientSession
) -> None:
    from tests.gateway.conftest import make_gateway

    out = tmp_path / "out"
    async with make_gateway(gym, out, repeats=2) as first:
        rollout = await start(http, first)
        await finish(http, first, rollout["rollout_id"], "")
        abandoned = await start(http, first)
        assert abandoned["repeat"] == 1
    # closing abandoned repeat 1 (recorded incomplete); a resumed gateway hands out only it
    assert gym.database_ids() == []
    async with make_gateway(gym, out, repeats=2) as second:
        assert second.plan.pending() == 1
        again = await start(http, second)
        assert again["repeat"] == 1
        async with http.post(f"{second.url}/rollouts", json={}) as response:
            assert response.status == 409
            assert (await response.json())["error"]["code"] == "in_progress"
        await finish(http, second, again["rollout_id"], "")
        async with http.post(f"{second.url}/rollouts", json={"repeat": 0}) as response:
            assert response.status == 409
            assert (await response.json())["error"]["code"] == "evaluated"
    log = RolloutLog.open(out, model="mcp-gateway")
    try:
        assert sorted(k[3] for k in log.finished) == [0, 1]
    finally:
        log.close()


async def test_concurrent_sdk_agents_each_score_their_own_rollout(
    gym: LocalGym, tmp_path: Any, http: aiohttp.ClientSession
) -> None:
    import asyncio

    from tests.gateway.conftest import make_gateway

    async def solve(gateway: Gateway, correct: bool) -> dict[str, Any]:
        rollout = await start(http, gateway)
        async with mcp_session(rollout["mcp_url"]) as agent:
            for step in load_demo_trajectory() if correct else ():
                assert (await agent.call_tool(step["name"], step["arguments"])).isError is False
        return await finish(http, gateway, rollout["rollout_id"], "done")

    async with make_gateway(gym, tmp_path / "out", repeats=4) as gateway:
        records = await asyncio.gather(*(solve(gateway, n % 2 == 0) for n in range(4)))
    assert sorted(r["repeat"] for r in records) == [0, 1, 2, 3]
    assert [r["reward"] for r in records] == [1.0, 0.0, 1.0, 0.0]
    assert gym.database_ids() == []
