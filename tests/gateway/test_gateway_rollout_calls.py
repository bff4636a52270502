"""A rollout's tool calls in flight: at most ``max_calls_per_rollout`` run on the gym at once
(the rest queue, and another rollout is not starved), and ``DELETE /rollouts/{id}`` waits for
them as ``finish`` does (each call is answered and in the record).

The gym holds every call of the ``hold`` tool until the test releases it; it counts each
``tools/call`` when it arrives (before the call waits for its database), so the count says
how many of a rollout's calls the gateway let through.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core import Task, load_task
from eog_core.errors import UsageError
from eog_core.gateway import Gateway, GatewayRollout
from eog_core.local import LocalGym, ToolContext, demo_paths
from tests.gateway.conftest import Records, make_gateway
from tests.gateway.test_gateway_hostile import initialize, open_rollout, rpc

CAP = 2
BURST = 6


class Held:
    def __init__(self) -> None:
        self.entered = 0
        self.release = asyncio.Event()


@pytest.fixture
async def held_gym() -> AsyncIterator[tuple[LocalGym, Held]]:
    held = Held()
    async with LocalGym.demo() as gym:

        @gym.tool(name="hold", description="Answers once the test lets it.")
        async def hold(ctx: ToolContext) -> str:
            held.entered += 1
            await held.release.wait()
            return "released"

        yield gym, held


def _task_with_hold() -> Task:
    raw: dict[str, Any] = json.loads(demo_paths().task.read_text(encoding="utf-8"))
    raw["selected_tools"] = [*raw["selected_tools"], "hold"]
    return load_task(raw)


def _call(name: str, arguments: dict[str, Any], call_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def _until(condition: Any) -> None:
    async with asyncio.timeout(10.0):
        while not condition():  # noqa: ASYNC110 - counters and states, no event to wait on
            await asyncio.sleep(0.001)


def _found(gateway: Gateway, rollout_id: str) -> GatewayRollout:
    found = gateway.find(rollout_id)
    assert isinstance(found, GatewayRollout)
    return found


async def test_one_rollout_s_burst_queues_beyond_the_cap_and_another_is_not_starved(
    held_gym: tuple[LocalGym, Held], tmp_path: Path
) -> None:
    gym, held = held_gym
    records = Records()
    async with (
        make_gateway(
            gym,
            tmp_path / "out",
            [_task_with_hold()],
            repeats=2,
            max_calls_per_rollout=CAP,
            on_record=records,
        ) as gateway,
        aiohttp.ClientSession() as http,
    ):
        busy, other = await open_rollout(http, gateway), await open_rollout(http, gateway)
        busy_session = await initialize(http, busy["mcp_url"])
        other_session = await initialize(http, other["mcp_url"])
        burst = [
            asyncio.create_task(rpc(http, busy["mcp_url"], busy_session, _call("hold", {}, n)))
            for n in range(BURST)
        ]
        rollout = _found(gateway, busy["rollout_id"])
        try:
            await _until(lambda: rollout.in_flight == BURST and held.entered == 1)
            status, body = await rpc(
                http,
                other["mcp_url"],
                other_session,
                _call("find_account", {"name": "Harbor Lane"}, 99),
            )
            assert status == 200 and body["result"]["isError"] is False  # not behind the burst
            # the busy rollout's calls that reached the gym: the cap, not the burst
            assert gym.method_counts["tools/call"] == CAP + 1
        finally:
            held.release.set()
        answers = await asyncio.gather(*burst)
        assert [status for status, _ in answers] == [200] * BURST
        assert all(body["result"]["isError"] is False for _, body in answers)
        assert gym.tool_executions["hold"] == BURST


async def test_delete_waits_for_calls_in_flight_which_are_answered_and_recorded(
    held_gym: tuple[LocalGym, Held], tmp_path: Path
) -> None:
    # one call runs on the gym, the second waits its turn in the gateway (the cap is 1):
    # both were accepted before DELETE, so both run, are answered and are in the record
    gym, held = held_gym
    records = Records()
    async with (
        make_gateway(
            gym,
            tmp_path / "out",
            [_task_with_hold()],
            max_calls_per_rollout=1,
            on_record=records,
        ) as gateway,
        aiohttp.ClientSession() as http,
    ):
        rollout = await open_rollout(http, gateway)
        session_id = await initialize(http, rollout["mcp_url"])
        found = _found(gateway, rollout["rollout_id"])
        calls = [
            asyncio.create_task(rpc(http, rollout["mcp_url"], session_id, _call("hold", {}, n)))
            for n in range(2)
        ]
        try:
            await _until(lambda: held.entered == 1 and found.in_flight == 2)
            deleting = asyncio.create_task(
                http.delete(f"{gateway.url}/rollouts/{rollout['rollout_id']}")
            )
            await _until(lambda: found.state == "abandoned")
            assert not deleting.done() and not records.items  # DELETE waits for the calls
        finally:
            held.release.set()
        for status, body in await asyncio.gather(*calls):
            assert status == 200 and body["result"]["content"][0]["text"] == "released"
        async with await deleting as response:
            assert response.status == 200
        [record] = await records.wait_for(1)
        assert record["status"] == "incomplete" and record["num_tool_calls"] == 2
        assert gym.tool_executions["hold"] == 2
        assert gym.database_ids() == []


async def test_a_cap_below_one_is_refused(tmp_path: Path) -> None:
    gateway = Gateway([load_task(demo_paths().task)], tmp_path / "out", max_calls_per_rollout=0)
    with pytest.raises(UsageError, match="max_calls_per_rollout must be at least 1, got 0"):
        await gateway.start()
    assert not (tmp_path / "out").exists()
