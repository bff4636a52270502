"""The NeMo Gym stack the adapter tests run against, on loopback: NeMo Gym's own
``SimpleAgent``, our resources server, a replaying Responses-API model server, LocalGym."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from fastapi import FastAPI, Request
from nemo_gym.config_types import BaseServerConfig, ModelServerRef, ResourcesServerRef
from nemo_gym.server_utils import ServerClient
from omegaconf import OmegaConf
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig

from eog_core import load_task, to_nemo_row
from eog_core.integrations.nemo_gym import EogResourcesServer, EogResourcesServerConfig
from eog_core.local import LocalGym, demo_paths, demo_tool_snapshot
from tests_integrations._support import FINAL_TEXT, arguments_text, free_port, script, serve_asgi

PATHS = demo_paths()


class ReplayModel:
    """A Responses-API model server that replays a script and records what it was sent."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/responses")(self.responses)

    async def responses(self, request: Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append(body)
        done = sum(1 for item in body["input"] if item.get("type") == "function_call_output")
        if done < len(self.steps):
            step = self.steps[done]
            output: list[dict[str, Any]] = [
                {
                    "type": "function_call",
                    "id": f"fc_{done}",
                    "call_id": f"call_{done}",
                    "name": step["name"],
                    "arguments": arguments_text(step),
                    "status": "completed",
                }
            ]
        else:
            output = [
                {
                    "type": "message",
                    "id": "msg_final",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
                }
            ]
        return {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 0,
            "model": "replay",
            "output": output,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
        }

    def observations(self) -> list[str]:
        last = self.requests[-1]["input"]
        return [item["output"] for item in last if item.get("type") == "function_call_output"]


class Stack:
    def __init__(
        self, gym: LocalGym, model: ReplayModel, agent_url: str, resources: EogResourcesServer
    ) -> None:
        self.gym, self.model, self.agent_url, self.resources = gym, model, agent_url, resources

    def run(self, kind: str, **row_overrides: Any) -> dict[str, Any]:
        self.model.steps = script(kind)
        task = load_task(PATHS.task)
        row = to_nemo_row(task, {self.gym.name: demo_tool_snapshot()}) | row_overrides
        answer = requests.post(f"{self.agent_url}/run", json=row, timeout=120)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


@contextmanager
def running_stack() -> Iterator[Stack]:
    """The three servers and LocalGym, up until exit."""
    model = ReplayModel()
    ports = {"model": free_port(), "eog": free_port(), "agent": free_port()}
    with LocalGym.demo().run_in_thread() as gym:
        config = OmegaConf.create(
            {
                "model": {
                    "responses_api_models": {
                        "replay": {"host": "127.0.0.1", "port": ports["model"]}
                    }
                },
                "eog": {"resources_servers": {"eog": {"host": "127.0.0.1", "port": ports["eog"]}}},
                "agent": {
                    "responses_api_agents": {
                        "simple_agent": {"host": "127.0.0.1", "port": ports["agent"]}
                    }
                },
            }
        )
        client = ServerClient(
            head_server_config=BaseServerConfig(host="127.0.0.1", port=free_port()),
            global_config_dict=config,
        )
        # How NeMo Gym hands a spawned server its config (its HTTP client reads it).
        patch = pytest.MonkeyPatch()
        patch.setenv("NEMO_GYM_CONFIG_DICT", OmegaConf.to_yaml(config))
        resources = EogResourcesServer(
            config=EogResourcesServerConfig(
                host="127.0.0.1",
                port=ports["eog"],
                entrypoint="",
                name="eog",
                gym_url_pools={gym.name: [gym.url]},
                seed_sql_root=str(PATHS.directory),
            ),
            server_client=client,
        )
        agent = SimpleAgent(
            config=SimpleAgentConfig(
                host="127.0.0.1",
                port=ports["agent"],
                entrypoint="",
                name="agent",
                model_server=ModelServerRef(type="responses_api_models", name="model"),
                resources_server=ResourcesServerRef(type="resources_servers", name="eog"),
            ),
            server_client=client,
        )
        try:
            with serve_asgi(
                (model.app, ports["model"]),
                (resources.setup_webserver(), ports["eog"]),
                (agent.setup_webserver(), ports["agent"]),
            ) as urls:
                yield Stack(gym, model, urls[2], resources)
        finally:
            patch.undo()


RESPONSE = {
    "id": "r",
    "object": "response",
    "created_at": 0,
    "model": "m",
    "output": [],
    "parallel_tool_calls": False,
    "tool_choice": "auto",
    "tools": [],
}


def a_server(stack: Stack, name: str, **options: Any) -> EogResourcesServer:
    return EogResourcesServer(
        config=EogResourcesServerConfig(
            host="127.0.0.1",
            port=0,
            entrypoint="",
            name=name,
            gym_url_pools={stack.gym.name: [stack.gym.url]},
            seed_sql_root=str(PATHS.directory),
            **options,
        ),
        server_client=stack.resources.server_client,
    )


def demo_row(stack: Stack) -> dict[str, Any]:
    """The demo task as a NeMo Gym row, with its tools."""
    return to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
