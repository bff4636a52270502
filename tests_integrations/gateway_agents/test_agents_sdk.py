"""The OpenAI Agents SDK's own MCP client (``MCPServerStreamableHttp``) through the gateway.

The agent's model is the test suite's scripted OpenAI-compatible model
(``tests/run/scripted_model.py``) behind a base_url: it plays the demo task's
correct trajectory (with parallel calls) or answers at once. The Agents SDK
lists the tools over MCP, calls them through the gateway and answers; the
rollout is then finished through the control API and scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI
from tests.run.scripted_model import FINAL_TEXT, ScriptedModel

from eog_core import load_task
from eog_core.gateway import Gateway
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory

set_tracing_disabled(True)  # nothing leaves the machine


async def rollout_with_agents_sdk(
    gateway: Gateway, model: ScriptedModel, script: str, token: str | None = None
) -> tuple[dict[str, Any], set[str]]:
    """One whole rollout; returns its record and the tools of the task's session."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession(headers=auth) as http:
        async with http.post(f"{gateway.url}/rollouts", json={}) as response:
            assert response.status == 201, await response.text()
            rollout = await response.json()
        [live] = gateway.rollouts()
        task_tools = set(live.session.tools.names)
        async with MCPServerStreamableHttp(
            params={"url": rollout["mcp_url"], "headers": auth, "timeout": 30},
            name="eog-task",
            cache_tools_list=True,
        ) as server:
            client = AsyncOpenAI(base_url=model.base_url, api_key="sk-scripted")
            agent = Agent(
                name="eog-agent",
                instructions=rollout["system_prompt"],
                mcp_servers=[server],
                model=OpenAIChatCompletionsModel(model=script, openai_client=client),
            )
            result = await Runner.run(agent, rollout["user_prompt"], max_turns=20)
            await client.close()
        async with http.post(
            f"{gateway.url}/rollouts/{rollout['rollout_id']}/finish",
            json={"final_answer": str(result.final_output)},
        ) as response:
            assert response.status == 200, await response.text()
            record: dict[str, Any] = await response.json()
    return record, task_tools


async def test_agents_sdk_solves_the_demo_task(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    token = "agents-sdk-token-123"
    async with Gateway(
        [load_task(demo_paths().task)],
        tmp_path / "out",
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=demo_paths().directory,
        token=token,
        model="openai-agents-sdk",
    ) as gateway:
        record, task_tools = await rollout_with_agents_sdk(gateway, model, "demo-correct", token)
    assert (record["status"], record["success"], record["reward"]) == ("evaluated", True, 1.0)
    assert record["parity"]["success"] is True
    assert record["final_answer"] == FINAL_TEXT
    assert record["model"] == "openai-agents-sdk"
    assert record["mcp_client"] is not None and record["mcp_client"]["name"]
    steps = load_demo_trajectory()
    assert record["num_tool_calls"] == len(steps)
    assert sorted(record["tools_used"]) == sorted({s["name"] for s in steps})
    # the Agents SDK offered its model exactly the task's tools, as the gateway listed them
    offered = {t["function"]["name"] for t in model.requests[0]["body"]["tools"]}
    assert offered == task_tools and len(offered) >= len({s["name"] for s in steps})
    assert gym.database_ids() == []


async def test_agents_sdk_do_nothing_scores_zero(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    async with Gateway(
        [load_task(demo_paths().task)],
        tmp_path / "out",
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=demo_paths().directory,
    ) as gateway:
        record, _ = await rollout_with_agents_sdk(gateway, model, "demo-answer")
    assert (record["status"], record["success"], record["reward"]) == ("evaluated", False, 0.0)
    assert record["num_tool_calls"] == 0 and record["final_answer"] == "Nothing to do."
    assert gym.database_ids() == []
