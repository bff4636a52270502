"""A Stirrup tool provider for EnterpriseOps-Gym tasks (``eog-core[stirrup]``).

``EogToolProvider`` is a real ``stirrup.ToolProvider``: entering it (Stirrup's
``Agent.session()`` does) seeds a :class:`~eog_core.gym.TaskSession` and returns
the task's tools as Stirrup ``Tool`` objects; leaving it verifies (unless
:meth:`EogToolProvider.verify` was called already) and deletes the databases.
The verdict stays on :attr:`EogToolProvider.verdict`.

Each tool's parameter model is built from the task's tool schema: the model is
shown that schema as is (upstream's cleaned schema), and the gym receives the
arguments the model gave, with no unset optional field filled in. The model sees
what upstream's model sees (:func:`eog_core.tool_observation`); a refusal or a
gym failure is a ``ToolResult(success=False)``, never an exception out of
``Agent.run``.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model
from stirrup import Tool, ToolProvider, ToolResult

from eog_core.errors import EogError, UsageError
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.integrations._sessions import SessionOptions, answer_tool_call
from eog_core.tasks import Task, ToolSnapshot, ToolSpec
from eog_core.verify import STRICT, Judge, Policy, TaskVerdict

__all__ = ["EogToolProvider", "parameters_model"]

log = logging.getLogger("eog_core.integrations.stirrup")


class ToolArguments(BaseModel):
    """Base of the generated parameter models: keeps every argument the model sent."""

    model_config = ConfigDict(extra="allow", populate_by_name=False)
    eog_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The schema the model is shown: the task's tool schema, not pydantic's rendering."""
        return copy.deepcopy(cls.eog_schema)


def parameters_model(spec: ToolSpec) -> type[ToolArguments]:
    """A pydantic model for one tool: required properties required, any JSON value accepted
    (the gym validates types, as it does for upstream), unknown keys kept."""
    schema = spec.parameters()
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {
        f"arg_{index}": (Any, Field(... if name in required else None, alias=name))
        for index, name in enumerate(properties)
    }
    model: type[ToolArguments] = create_model(  # type: ignore[call-overload]
        f"{spec.name}_arguments", __base__=ToolArguments, **fields
    )
    model.eog_schema = schema
    return model


class EogToolProvider(ToolProvider):
    """Seeds on enter, serves the task's tools, verifies and deletes on exit."""

    def __init__(
        self,
        task: Task,
        *,
        directory: GymDirectory | None = None,
        seed_root: str | os.PathLike[str] | None = None,
        tool_snapshots: Mapping[str, ToolSnapshot] | None = None,
        janitor: Janitor | None = None,
        policy: Policy = STRICT,
        judge: Judge | None = None,
        **start_options: Any,
    ) -> None:
        self.task = task
        self.policy = policy
        self.judge = judge
        self.verdict: TaskVerdict | None = None
        self._start = SessionOptions(
            directory=directory,
            seed_root=seed_root,
            tool_snapshots=tool_snapshots,
            janitor=janitor,
            extra=start_options,
        )
        self._session: TaskSession | None = None

    @property
    def session(self) -> TaskSession:
        """The live task session (between enter and exit)."""
        if self._session is None:
            raise UsageError("the provider has no session: use it inside `async with`")
        return self._session

    async def __aenter__(self) -> list[Tool[Any, Any]]:
        if self._session is not None:
            raise UsageError("this provider is already entered")
        self.verdict = None
        self._session = await self._start.start(self.task)
        return [self._tool(spec) for spec in self._session.tools.tools]

    def _tool(self, spec: ToolSpec) -> Tool[Any, Any]:
        async def execute(params: ToolArguments) -> ToolResult[Any]:
            arguments = params.model_dump(by_alias=True, exclude_unset=True)
            answer = await answer_tool_call(lambda: self.session, spec.name, arguments)
            return ToolResult(content=answer.observation, success=not answer.is_error)

        return Tool[ToolArguments, Any](
            name=spec.name,
            description=spec.description,
            parameters=parameters_model(spec),
            executor=execute,
        )

    async def verify(self, final_response: str | None = None) -> TaskVerdict:
        """Score the rollout now (before exit), e.g. with the finish tool's reason."""
        self.verdict = await self.session.verify(
            policy=self.policy, final_response=final_response, judge=self.judge
        )
        return self.verdict

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        try:
            if self.verdict is None and not session.closed:
                self.verdict = await session.verify(policy=self.policy, judge=self.judge)
        except EogError:
            log.exception("verifying %s on exit failed", self.task.task_id)
        finally:
            await session.aclose()
