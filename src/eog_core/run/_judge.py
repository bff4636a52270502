"""The ``response_check`` judge on the run's own model endpoint (upstream judges with the
agent's client)."""

from __future__ import annotations

from typing import Any

import attrs

from eog_core.errors import JudgeError, ModelError
from eog_core.run._model import ModelClient
from eog_core.verify import JudgeRequest

__all__ = ["ModelJudge"]


@attrs.frozen
class ModelJudge:
    """The ``response_check`` judge on a model endpoint, at the request's temperature (0.0)."""

    client: ModelClient
    model: str | None = None

    async def __call__(self, request: JudgeRequest) -> str:
        conversation = self.client.conversation(request.system_prompt, request.user_prompt, [])
        overrides: dict[str, Any] = {"temperature": request.temperature}
        if self.model:
            overrides["model"] = self.model
        try:
            reply = await self.client.ask(conversation, overrides=overrides)
        except ModelError as exc:
            raise JudgeError(f"judge model failed: {exc}") from exc
        return reply.turn.text
