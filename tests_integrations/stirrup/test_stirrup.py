"""EogToolProvider under Stirrup's own Agent loop, with a replaying LLMClient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from stirrup import Agent, AssistantMessage, ChatMessage, Tool, ToolCall, ToolMessage

from eog_core import load_task
from eog_core.gym import GymDirectory, Janitor
from eog_core.integrations.stirrup import EogToolProvider, parameters_model
from eog_core.local import LocalGym, demo_paths, demo_tool_snapshot
from tests_integrations._support import (
    FINAL_TEXT,
    arguments_text,
    doc_examples,
    run_example,
    script,
)

PATHS = demo_paths()


class ReplayClient:
    """A Stirrup LLMClient that plays a script of tool calls, then calls the finish tool."""

    model_slug = "replay"
    context_window_tokens = 1_000_000

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps
        self.tool_messages: list[ToolMessage] = []
        self.tool_names: list[str] = []

    async def generate(
        self, messages: list[ChatMessage], tools: dict[str, Tool[Any, Any]]
    ) -> AssistantMessage:
        self.tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
        self.tool_names = sorted(tools)
        done = len(self.tool_messages)
        if done < len(self.steps):
            step = self.steps[done]
            call = ToolCall(
                name=step["name"], arguments=arguments_text(step), tool_call_id=f"call_{done}"
            )
        else:
            call = ToolCall(
                name="finish",
                arguments=json.dumps({"reason": FINAL_TEXT, "paths": []}),
                tool_call_id="call_finish",
            )
        return AssistantMessage(blocks=[call])


async def rollout(gym: LocalGym, kind: str) -> tuple[EogToolProvider, ReplayClient, Any]:
    client = ReplayClient(script(kind))
    async with Janitor() as janitor:
        provider = EogToolProvider(
            load_task(PATHS.task),
            directory=GymDirectory({gym.name: gym.url}),
            seed_root=PATHS.directory,
            janitor=janitor,
        )
        agent = Agent(
            client=client, name="eog", tools=[provider], max_turns=len(script("solve")) + 3
        )
        async with agent.session() as session:
            finish, _history, _metadata = await session.run("Solve the task.")
            assert provider.session.database_ids
            await provider.verify(final_response=finish.reason if finish else None)
            trajectory = list(provider.session.trajectory)
            assert client.tool_names == sorted([*provider.session.tools.names, "finish"])
        assert await janitor.aclose() == []
    return provider, client, trajectory


@pytest.fixture
async def gym() -> Any:
    async with LocalGym.demo() as server:
        yield server


async def test_the_correct_trajectory_scores_one(gym: LocalGym) -> None:
    provider, client, trajectory = await rollout(gym, "solve")
    assert provider.verdict is not None and provider.verdict.reward == 1.0
    sent = [(r.name, dict(r.arguments)) for r in trajectory]
    assert sent == [(s["name"], s["arguments"]) for s in script("solve")]  # nothing filled in
    assert all(m.success for m in client.tool_messages[:-1])
    assert json.loads(client.tool_messages[0].content)["isError"] is False
    assert gym.database_ids() == []


async def test_doing_nothing_scores_zero(gym: LocalGym) -> None:
    provider, _client, trajectory = await rollout(gym, "idle")
    assert provider.verdict is not None and provider.verdict.reward == 0.0 and trajectory == []
    assert gym.database_ids() == []


async def test_a_gym_fault_reaches_the_model_as_a_failed_tool_result(gym: LocalGym) -> None:
    gym.drop_next(after_tool_call=True)
    provider, client, trajectory = await rollout(gym, "solve")
    first = client.tool_messages[0]
    assert first.success is False and "Error: " in first.content
    assert trajectory[0].error_kind == "gym_protocol"
    assert provider.verdict is not None  # the loop went on to the end
    assert gym.database_ids() == []


async def test_exit_verifies_and_deletes_when_the_harness_did_not(gym: LocalGym) -> None:
    provider = EogToolProvider(
        load_task(PATHS.task),
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=PATHS.directory,
    )
    async with provider as tools:
        assert gym.database_ids() != []
        assert [t.name for t in tools] == list(provider.session.tools.names)
    assert provider.verdict is not None and provider.verdict.reward == 0.0
    assert gym.database_ids() == []


def test_parameter_models_show_the_task_schema_and_keep_the_model_arguments() -> None:
    for spec in demo_tool_snapshot().tools:
        model = parameters_model(spec)
        assert model.model_json_schema() == spec.parameters()
    create_case = next(t for t in demo_tool_snapshot().tools if t.name == "create_case")
    model = parameters_model(create_case)
    given = {"account_id": "acc_001", "short_description": "x", "unknown_key": [1]}
    params = model.model_validate_json(json.dumps(given))
    assert params.model_dump(by_alias=True, exclude_unset=True) == given


@pytest.mark.parametrize("code", doc_examples("stirrup"))
def test_the_documented_example_runs(code: str, tmp_path: Path) -> None:
    assert "Stirrup tool provider: reward 1.0" in run_example(code, tmp_path)
