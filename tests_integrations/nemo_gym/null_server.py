"""NeMo Gym's framework alone, for ``cpu_per_rollout``: a resources server with
``EogResourcesServer``'s routes and body types that does no work (seeds nothing, answers
every tool call with one fixed observation, rewards 1), so its CPU per rollout is the
floor under any resources server on NeMo Gym 0.7."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request, Response
from nemo_gym.base_resources_server import BaseVerifyResponse, SimpleResourcesServer

from eog_core.integrations.nemo_gym import (
    EogResourcesServerConfig,
    EogSeedSessionRequest,
    EogSeedSessionResponse,
    EogVerifyRequest,
)

OBSERVATION = json.dumps({"content": [{"type": "text", "text": "{}"}], "isError": False})


class NullResourcesServer(SimpleResourcesServer):
    ray_enabled = False
    config: EogResourcesServerConfig

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/{tool_name}")(self.call_tool)
        return app

    async def seed_session(self, body: EogSeedSessionRequest) -> EogSeedSessionResponse:  # type: ignore[override]
        return EogSeedSessionResponse()

    async def call_tool(self, tool_name: str, request: Request) -> Response:
        await request.body()
        return Response(content=OBSERVATION, media_type="application/json")

    async def verify(self, body: EogVerifyRequest) -> BaseVerifyResponse:  # type: ignore[override]
        return BaseVerifyResponse(**body.model_dump(), reward=1.0)
