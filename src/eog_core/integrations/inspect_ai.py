"""An inspect-ai Task for EnterpriseOps-Gym (``eog-core[inspect]``).

``eog_task(tasks, ...)`` builds an ``inspect_ai.Task``: one ``Sample`` per task
(system and user prompts as messages, the task as metadata), a setup solver
that seeds a :class:`~eog_core.gym.TaskSession` and gives the sample the task's
tools as ``ToolDef``s, any solver you like (``generate()`` by default: inspect's
own tool loop), a scorer returning ``Score(value=reward, explanation,
metadata=verdict row)``, and a cleanup that deletes the databases.

The model sees what upstream's model sees (:func:`eog_core.tool_observation`);
a gym failure during a call reaches it as a tool error (``ToolError``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import Score, Scorer, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver
from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParams

from eog_core.errors import UsageError
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.integrations._sessions import SessionOptions, answer_tool_call
from eog_core.tasks import Task as EogTask
from eog_core.tasks import ToolSnapshot, ToolSpec, load_task, task_record
from eog_core.verify import STRICT, Judge, Policy

__all__ = ["eog_dataset", "eog_task", "inspect_parameters"]

#: JSON-schema keys inspect's ToolParam models; others are dropped from tool schemas.
_PARAM_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "default",
        "enum",
        "items",
        "properties",
        "additionalProperties",
        "anyOf",
        "required",
    }
)


def _acceptable(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _PARAM_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _acceptable(prop) for name, prop in value.items()}
        elif key == "items" or (key == "additionalProperties" and isinstance(value, Mapping)):
            out[key] = _acceptable(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_acceptable(option) for option in value]
        else:
            out[key] = value
    return out


def inspect_parameters(spec: ToolSpec) -> ToolParams:
    """A tool's cleaned schema (what upstream shows) as inspect's ``ToolParams``: keys
    inspect does not model (``minimum``, ``pattern``, ``title``...) are dropped, and a
    parameter without a description (inspect requires one) is described by its name."""
    schema = _acceptable(spec.parameters())
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and not prop.get("description"):
            prop["description"] = name
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return ToolParams.model_validate(schema)


def _sample(task: EogTask, index: int) -> Sample:
    messages: list[Any] = []
    if task.system_prompt:
        messages.append(ChatMessageSystem(content=task.system_prompt))
    messages.append(ChatMessageUser(content=task.user_prompt or ""))
    return Sample(
        input=messages,
        id=task.task_id or f"task-{index}",
        metadata={"eog_task": task_record(task), "domain": task.domain},
    )


def eog_dataset(
    tasks: Iterable[EogTask | str | os.PathLike[str] | Mapping[str, Any]],
) -> MemoryDataset:
    """Samples from tasks, task files or rows (anything :func:`eog_core.load_task` reads)."""
    loaded = [
        t if isinstance(t, EogTask) else load_task(t if isinstance(t, Mapping) else Path(t))
        for t in tasks
    ]
    return MemoryDataset([_sample(task, i) for i, task in enumerate(loaded)], name="eog")


class _Sessions:
    """The live task session of each running sample (per epoch)."""

    def __init__(self, start: SessionOptions) -> None:
        self.start = start
        self.live: dict[tuple[Any, int], TaskSession] = {}

    @staticmethod
    def key(state: TaskState) -> tuple[Any, int]:
        return (state.sample_id, state.epoch)

    def get(self, state: TaskState) -> TaskSession:
        session = self.live.get(self.key(state))
        if session is None:
            raise UsageError(
                f"sample {state.sample_id!r} has no seeded session (setup did not run)"
            )
        return session

    async def close(self, state: TaskState) -> None:
        session = self.live.pop(self.key(state), None)
        if session is not None:
            await session.aclose()


def _tool(sessions: _Sessions, state: TaskState, spec: ToolSpec) -> Tool:
    async def execute(**kwargs: Any) -> str:
        session = sessions.get(state)  # none: setup did not run, a harness error
        answer = await answer_tool_call(lambda: session, spec.name, kwargs)
        if answer.gym_error is not None:
            raise ToolError(answer.gym_error)  # the gym failed, not the call
        return answer.observation

    return ToolDef(
        execute, name=spec.name, description=spec.description, parameters=inspect_parameters(spec)
    ).as_tool()


@solver
def seed_session(sessions: _Sessions) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = load_task(dict(state.metadata["eog_task"]))
        await sessions.close(state)  # a retried sample starts afresh
        session = await sessions.start.start(task)
        sessions.live[sessions.key(state)] = session
        state.tools = [_tool(sessions, state, spec) for spec in session.tools.tools]
        return state

    return solve


@scorer(metrics=[accuracy(), stderr(), mean()])
def verdict_scorer(
    sessions: _Sessions, policy: Policy = STRICT, judge: Judge | None = None
) -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        verdict = await sessions.get(state).verify(
            policy=policy,
            final_response=state.output.completion if state.output else None,
            judge=judge,
        )
        failed = [r.name for r in verdict.results if r.counted and not r.passed]
        explanation = f"{verdict.num_passed}/{verdict.num_scored} verifiers passed" + (
            f"; failed: {', '.join(failed)}" if failed else ""
        )
        return Score(
            value=verdict.reward,
            answer=state.output.completion if state.output else None,
            explanation=explanation,
            metadata=verdict.to_row(),
        )

    return score


def eog_task(
    tasks: Iterable[EogTask | str | os.PathLike[str] | Mapping[str, Any]],
    *,
    directory: GymDirectory | None = None,
    seed_root: str | os.PathLike[str] | None = None,
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None,
    janitor: Janitor | None = None,
    policy: Policy = STRICT,
    judge: Judge | None = None,
    solver: Solver | list[Solver] | None = None,
    **task_options: Any,
) -> Task:
    """An inspect Task over EOG tasks; ``task_options`` go to ``inspect_ai.Task``
    (``message_limit``, ``epochs``...)."""
    sessions = _Sessions(
        SessionOptions(
            directory=directory, seed_root=seed_root, tool_snapshots=tool_snapshots, janitor=janitor
        )
    )
    return Task(
        dataset=eog_dataset(tasks),
        setup=seed_session(sessions),
        solver=solver or generate(),
        scorer=verdict_scorer(sessions, policy, judge),
        cleanup=sessions.close,
        **task_options,
    )
