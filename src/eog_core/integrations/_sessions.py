"""What the agent-framework adapters (inspect-ai, Stirrup) share: how they start a task
session for a sample, and what a tool call answers the framework.

Each adapter starts a :class:`~eog_core.gym.TaskSession` with the caller's directory,
seed root, tool snapshots and janitor, gym failures turned into results
(``tool_errors="result"``), and answers a tool call with what upstream's model sees
(:func:`eog_core.tool_observation`), telling a failed gym from a tool's own refusal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from eog_core.errors import EogError
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.model_view import tool_observation
from eog_core.tasks import Task, ToolSnapshot

__all__ = ["SessionOptions", "ToolAnswer", "answer_tool_call"]


@attrs.frozen(kw_only=True)
class SessionOptions:
    """The :meth:`TaskSession.start` options an adapter was built with."""

    directory: GymDirectory | None = None
    seed_root: str | os.PathLike[str] | None = None
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None
    janitor: Janitor | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)

    async def start(self, task: Task) -> TaskSession:
        """Seed ``task``; the session answers gym failures as tool results."""
        return await TaskSession.start(
            task,
            tool_errors="result",
            directory=self.directory,
            seed_root=self.seed_root,
            tool_snapshots=self.tool_snapshots,
            janitor=self.janitor,
            **self.extra,
        )


@attrs.frozen(kw_only=True)
class ToolAnswer:
    """One tool call as an agent framework reports it."""

    observation: str
    """What the model is shown: upstream's view of the result, or ``Error: ...``."""
    is_error: bool
    """The call failed: the tool refused it, the gym failed, or the session could not call."""
    gym_error: str | None
    """The gym failed (not the tool) or the call could not be made: the text saying so."""


async def answer_tool_call(
    session_of: Callable[[], TaskSession], name: str, arguments: Mapping[str, Any]
) -> ToolAnswer:
    """Call ``name`` on the session ``session_of()`` gives (asked inside: no session is an
    answer too); a refusal or a gym failure is an answer, not an exception."""
    try:
        session = session_of()
        result = await session.call_tool(name, arguments)
    except EogError as exc:  # a closed session and the like: the agent's loop carries on
        return ToolAnswer(observation=f"Error: {exc}", is_error=True, gym_error=f"Error: {exc}")
    gym_failed = bool(session.trajectory) and session.trajectory[-1].error_kind is not None
    return ToolAnswer(
        observation=tool_observation(result),
        is_error=result.is_error,
        gym_error=result.text if gym_failed else None,
    )
