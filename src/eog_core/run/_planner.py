"""``planner_react``: a planner model writes a plan, then the ReAct loop runs with it.

Upstream's ``orchestrators/planner_react.py``: pass 1 sends the planner one user message,
upstream's prompt template filled with the system prompt, the user prompt and the task's
tools as ``tools/list`` gave them (``json.dumps(..., indent=2)``, with the three ``_mcp_*``
fields upstream's executor adds); no tools are offered. Pass 2 is :func:`run_agent` on the
task's user prompt replaced by upstream's plan message (the task, then the plan). The
texts come from an upstream checkout (:mod:`eog_core.run._planner_source`).

Endings beyond the loop's: a planner answer with no text is ``no_plan`` (upstream would
hand the executor an empty plan); a planner prompt over the context window is
``context_overflow`` before any tool ran; the planner's other model failures are the
executor's failure kinds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import attrs

from eog_core._plumbing import iso_time
from eog_core.errors import ContextOverflowError, ToolCallParseError
from eog_core.gym import TaskSession
from eog_core.run._apis import ChatConversation, Conversation, ResponsesConversation, Usage
from eog_core.run._loop import AgentRun, run_agent
from eog_core.run._model import ModelClient, ModelReply
from eog_core.run._planner_source import PlannerTemplate
from eog_core.run._settings import ModelSettings
from eog_core.tasks import ToolSpec

__all__ = [
    "ORCHESTRATORS",
    "Planner",
    "planner_tool_entries",
    "planner_tools",
    "run_planner_react",
]

ORCHESTRATORS = ("react", "planner_react", "decomposing")
"""What ``--orchestrator`` offers: upstream's three orchestrators."""


class PlannerModel:
    """What the planner orchestrators share (:class:`Planner`, ``Decomposer``): the planner
    model, the executor's unless ``settings`` name another, with a client of its own then
    (closed by :meth:`aclose`), and what a record says of it."""

    template: PlannerTemplate | Any  # a template with its file's ``sha256``
    settings: ModelSettings | None
    _client: ModelClient | None

    def client_for(self, executor: ModelClient) -> ModelClient:
        if self.settings is None:
            return executor
        if self._client is None:
            self._client = ModelClient(self.settings)
        return self._client

    def describe(self) -> dict[str, Any]:
        """What the record says of the planner (no key)."""
        return {
            "template_sha256": self.template.sha256,
            "model": None if self.settings is None else self.settings.describe(),
        }

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


@attrs.define
class Planner(PlannerModel):
    """The planner of ``planner_react``: upstream's texts and where the planner model is.

    ``settings`` None: the executor's endpoint, model and key (upstream's default when no
    ``--planner_llm_config`` is given). Close it with :meth:`aclose` (the run does)."""

    orchestrator: ClassVar[str] = "planner_react"
    template: PlannerTemplate
    settings: ModelSettings | None = None
    _client: ModelClient | None = attrs.field(default=None, init=False, repr=False)


def planner_tools(session: TaskSession) -> list[dict[str, Any]]:
    """The task's tools as upstream's planner prompt shows them (:func:`planner_tool_entries`),
    with the URLs of the replicas the session's databases live on."""
    return planner_tool_entries(session.tools.tools, session.gym_urls())


def planner_tool_entries(
    tools: Iterable[ToolSpec], gym_urls: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Each tool's ``tools/list`` entry as the gym (or the tool snapshot) gave it, with
    ``_mcp_server_name``, ``_mcp_server_url`` (from ``gym_urls``) and an empty
    ``_database_id`` (upstream lists tools before it creates the databases)."""
    shown: list[dict[str, Any]] = []
    for tool in tools:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.listed is not None:  # the gym's own entry, every key in its order
            entry = dict(tool.listed)
        else:
            if tool.description:
                entry["description"] = tool.description
            entry["inputSchema"] = dict(tool.input_schema)
            if tool.output_schema is not None:
                entry["outputSchema"] = dict(tool.output_schema)
        entry["_mcp_server_name"] = tool.gym
        entry["_mcp_server_url"] = gym_urls.get(tool.gym or "", "")
        entry["_database_id"] = ""
        shown.append(entry)
    return shown


def _planner_conversation(client: ModelClient, prompt: str) -> Conversation:
    message = [{"role": "user", "content": prompt}]
    if client.settings.api == "responses":
        return ResponsesConversation(message, ())
    return ChatConversation(message, ())


def _planner_turn(reply: ModelReply) -> dict[str, Any]:
    """The planner's answer as a turn of the record (turn 0: the executor's count from 1)."""
    answer = reply.turn
    extra: dict[str, Any] = {}
    if reply.repaired:
        extra["repaired_surrogates"] = reply.repaired
    if answer.token_data is not None:
        extra["token_data"] = answer.token_data
    return extra | {
        "turn": 0,
        "role": "planner",
        "started_at": iso_time(reply.started_at),
        "finished_at": iso_time(time.time()),
        "model_latency_ms": round(reply.latency_ms, 3),
        "attempts": reply.attempts,
        "usage": answer.usage.to_dict(),
        "finish_reason": answer.finish_reason,
        "text": answer.text,
        "reasoning": answer.reasoning,
        "tool_calls": [],
    }


def _ended_before_executor(
    session: TaskSession, turns: tuple[dict[str, Any], ...], usage: Usage, **why: Any
) -> AgentRun:
    return AgentRun(
        turns=turns,
        final_answer="",
        tools_used=(),
        usage=usage,
        model_latency_ms=sum(t["model_latency_ms"] for t in turns),
        tool_latency_ms=0.0,
        tools_offered=len(session.tools.tools),
        orchestrator="planner_react",
        usage_by_role={"planner": usage, "executor": Usage()},
        **why,
    )


async def run_planner_react(
    session: TaskSession,
    client: ModelClient,
    planner: Planner,
    *,
    max_turns: int = 50,
    raw_schemas: bool = False,
) -> AgentRun:
    """Plan, then run the loop with the plan; ``max_turns`` bounds the executor's answers."""
    task = session.task
    system, user = task.system_prompt or "", task.user_prompt or ""
    prompt = planner.template.planner_prompt(system, user, planner_tools(session))
    planner_client = planner.client_for(client)
    try:
        reply = await planner_client.ask(_planner_conversation(planner_client, prompt), turn=0)
    except ContextOverflowError as exc:
        return _ended_before_executor(
            session, (), Usage(), stop_reason="context_overflow", overflow_detail=exc.detail
        )
    except ToolCallParseError as exc:
        return _ended_before_executor(
            session, (), Usage(), stop_reason="malformed_tool_call", malformed_tool_call=exc
        )
    planned = _planner_turn(reply)
    plan = reply.turn.text
    if not plan.strip():
        return _ended_before_executor(
            session, (planned,), reply.turn.usage, stop_reason="no_plan", plan=plan
        )
    message = planner.template.executor_message(user, plan)
    executor = await run_agent(
        session, client, max_turns=max_turns, raw_schemas=raw_schemas, user_prompt=message
    )
    return attrs.evolve(
        executor,
        turns=(planned, *({"role": "executor", **turn} for turn in executor.turns)),
        usage=reply.turn.usage + executor.usage,
        model_latency_ms=reply.latency_ms + executor.model_latency_ms,
        orchestrator="planner_react",
        plan=plan,
        usage_by_role={"planner": reply.turn.usage, "executor": executor.usage},
        user_prompt=message,
    )
