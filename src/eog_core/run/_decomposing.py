"""``decomposing``: a planner splits the task into subtasks, a sub-agent runs each, in order.

Upstream's ``orchestrators/decomposing_planner.py``, three phases:

1. the planner gets one user message (upstream's decomposition template with the system
   prompt, the user prompt and a ``- name: description`` line per tool), no tools, and
   answers a JSON decomposition (:mod:`eog_core.run._decomposition`); an answer that is
   not one is asked again, upstream's 3 attempts, 1 s apart;
2. each subtask, in the planner's order, runs the ReAct loop (:func:`run_agent`) on the
   system prompt and upstream's sub-agent prompt (the subtask and the working memory so
   far), with the task's tools, at most upstream's 25 answers (fewer with ``max_turns``);
   then the same conversation, plus upstream's extraction prompt and without tools, asks
   the model what to keep; a JSON object it answers is merged into the working memory;
3. the final answer is composed from the subtask results with upstream's texts (no model).

Endings beyond the loop's: no valid decomposition after the attempts is
``bad_decomposition`` (upstream goes on with "Failed to generate plan" as the answer);
a planner prompt over the context window is ``context_overflow`` before any tool ran; a
sub-agent's context overflow fails that subtask and the next one runs (as upstream does
with any error of a sub-agent); a tool call the server cannot parse ends the rollout
``malformed_tool_call``; other model failures are the executor's failure kinds.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import attrs

from eog_core.errors import ContextOverflowError, ToolCallParseError
from eog_core.gym import TaskSession
from eog_core.model_view import tools_used
from eog_core.run._apis import ChatConversation, Conversation, ResponsesConversation, Usage
from eog_core.run._decomposing_source import DecomposingTemplate
from eog_core.run._decomposition import (
    BadDecomposition,
    Decomposition,
    SubtaskResult,
    decomposition_prompt,
    extraction_prompt,
    final_output,
    parse_decomposition,
    parse_memory,
    subtask_prompt,
)
from eog_core.run._loop import AgentRun, StopReason, run_agent
from eog_core.run._model import ModelClient, ModelReply
from eog_core.run._planner import PlannerModel, _planner_conversation, _planner_turn, planner_tools
from eog_core.run._settings import ModelSettings

__all__ = ["Decomposer", "run_decomposing"]


@attrs.define
class Decomposer(PlannerModel):
    """The planner of ``decomposing``: upstream's texts and where the planner model is.

    ``settings`` None: the executor's endpoint, model and key (upstream's default);
    ``retry_delay``: seconds between planner attempts (upstream's 1)."""

    orchestrator: ClassVar[str] = "decomposing"
    template: DecomposingTemplate
    settings: ModelSettings | None = None
    retry_delay: float = 1.0
    _client: ModelClient | None = attrs.field(default=None, init=False, repr=False)


def _answer_turn(reply: ModelReply, number: int, role: str, **extra: Any) -> dict[str, Any]:
    return _planner_turn(reply) | {"turn": number, "role": role} | extra


def _with_user(conversation: Conversation, prompt: str) -> Conversation:
    """The conversation so far with one more user message, no tools offered. On Responses an
    answer's text item is handed back without its ``status``, as LangChain rebuilds it (the
    sub-agent's last answer is one: the differential's ``demo@responses``)."""
    message = {"role": "user", "content": prompt}
    if isinstance(conversation, ResponsesConversation):
        items = [
            {k: v for k, v in item.items() if k != "status"}
            if item.get("type") == "message" and item.get("role") == "assistant"
            else item
            for item in conversation.items
        ]
        return ResponsesConversation([*items, message], ())
    assert isinstance(conversation, ChatConversation)
    return ChatConversation([*conversation.messages, message], ())


@attrs.define
class _Rollout:
    """The transcript and totals of one ``decomposing`` rollout as it goes."""

    session: TaskSession
    turns: list[dict[str, Any]] = attrs.field(factory=list)
    by_role: dict[str, Usage] = attrs.field(factory=lambda: {"planner": Usage()})
    model_ms: float = 0.0
    tool_ms: float = 0.0
    errors: list[str] = attrs.field(factory=list)
    """Why each planner answer so far held no decomposition."""

    def add(self, turn: dict[str, Any], usage: Usage, latency_ms: float) -> None:
        self.turns.append(turn | {"turn": len(self.turns) + 1})
        self.by_role[turn["role"]] = self.by_role.get(turn["role"], Usage()) + usage
        self.model_ms += latency_ms

    def ended(
        self, stop_reason: StopReason, final: str, decomposition: dict[str, Any], **why: Any
    ) -> AgentRun:
        usage = sum(self.by_role.values(), Usage())
        return AgentRun(
            turns=tuple(self.turns),
            stop_reason=stop_reason,
            final_answer=final,
            tools_used=tuple(tools_used(self.session.trajectory)),
            usage=usage,
            model_latency_ms=self.model_ms,
            tool_latency_ms=self.tool_ms,
            tools_offered=len(self.session.tools.tools),
            orchestrator="decomposing",
            plan=decomposition.get("plan"),
            usage_by_role=dict(self.by_role),
            decomposition=decomposition,
            **why,
        )


async def _decompose(
    state: _Rollout, client: ModelClient, planner: Decomposer
) -> Decomposition | AgentRun:
    """Phase 1: the decomposition, or the rollout's end."""
    task, template = state.session.task, planner.template
    prompt = decomposition_prompt(
        template, task.system_prompt or "", task.user_prompt or "", planner_tools(state.session)
    )
    planner_client = planner.client_for(client)
    errors = state.errors
    for attempt in range(1, template.planner_attempts + 1):
        conversation = _planner_conversation(planner_client, prompt)
        try:
            reply = await planner_client.ask(conversation, turn=len(state.turns) + 1)
        except ContextOverflowError as exc:
            return state.ended(
                "context_overflow", "", {"errors": errors}, overflow_detail=exc.detail
            )
        except ToolCallParseError as exc:
            return state.ended(
                "malformed_tool_call", "", {"errors": errors}, malformed_tool_call=exc
            )
        turn = _answer_turn(reply, 0, "planner")
        try:
            found = parse_decomposition(reply.turn.text, template)
        except BadDecomposition as exc:
            errors.append(str(exc))
            state.add(turn | {"decomposition_error": str(exc)}, reply.turn.usage, reply.latency_ms)
            if attempt < template.planner_attempts:
                await asyncio.sleep(planner.retry_delay)
            continue
        state.add(turn, reply.turn.usage, reply.latency_ms)
        return found
    return state.ended("bad_decomposition", "", {"plan": None, "errors": errors})


def _result_of(observation: str) -> Any:
    """The MCP result an observation shows (``json.dumps`` of it; the text itself otherwise)."""
    try:
        return json.loads(observation)
    except ValueError:
        return observation


async def _remember(
    client: ModelClient,
    template: DecomposingTemplate,
    subtask: dict[str, Any],
    agent: AgentRun,
) -> tuple[ModelReply | None, dict[str, Any], str | None]:
    """After a subtask: the model's answer to upstream's extraction prompt, and what it adds."""
    actions = [
        (call["name"], _result_of(call["observation"]))
        for turn in agent.turns
        for call in turn["tool_calls"]
    ]
    assert agent.conversation is not None
    prompt = extraction_prompt(template, subtask, actions)
    try:
        reply = await client.ask(_with_user(agent.conversation, prompt))
    except (ContextOverflowError, ToolCallParseError) as exc:  # upstream: nothing remembered
        return None, {}, f"{type(exc).__name__}: {exc}"
    memory, problem = parse_memory(reply.turn.text)
    return reply, memory, problem


async def run_decomposing(
    session: TaskSession,
    client: ModelClient,
    planner: Decomposer,
    *,
    max_turns: int = 50,
    raw_schemas: bool = False,
) -> AgentRun:
    """Decompose, run each subtask's sub-agent, compose the answer (the module says how)."""
    state, template = _Rollout(session), planner.template
    found = await _decompose(state, client, planner)
    if isinstance(found, AgentRun):
        return found
    memory: dict[str, Any] = {}
    results: list[SubtaskResult] = []
    cap = min(template.max_subtask_turns, max_turns)
    for index, subtask in enumerate(found.subtasks, start=1):
        role = f"sub-agent {index}"
        prompt = subtask_prompt(template, subtask, memory)
        agent = await run_agent(
            session, client, max_turns=cap, raw_schemas=raw_schemas, user_prompt=prompt
        )
        for turn in agent.turns:
            state.add(turn | {"role": role, "subtask": subtask["id"]}, Usage(), 0.0)
        state.by_role[role] = state.by_role.get(role, Usage()) + agent.usage
        state.model_ms += agent.model_latency_ms
        state.tool_ms += agent.tool_latency_ms
        decomposition = _record(found, results, memory, state.errors)
        if agent.malformed_tool_call is not None:
            return state.ended(
                "malformed_tool_call",
                "",
                decomposition,
                malformed_tool_call=agent.malformed_tool_call,
            )
        used = tuple(dict.fromkeys(c["name"] for t in agent.turns for c in t["tool_calls"]))
        base = {"subtask_id": subtask["id"], "title": subtask["title"], "tools_used": used}
        if agent.stop_reason == "context_overflow":  # upstream: the subtask failed, go on
            error = agent.overflow_detail or "context overflow"
            summary = str(template.error_summary.render({"str(e)": error}))
            result = SubtaskResult(
                **base, success=False, summary=summary, stop_reason="context_overflow", error=error
            )
        else:
            calls = sum(len(t["tool_calls"]) for t in agent.turns)
            fallback = template.summary_fallback
            [slot] = fallback.slots()
            summary = agent.final_answer or str(fallback.render({slot: calls}))
            reply, remembered, problem = await _remember(client, template, subtask, agent)
            if reply is not None:
                state.add(
                    _answer_turn(reply, 0, role, subtask=subtask["id"], memory_extraction=True),
                    reply.turn.usage,
                    reply.latency_ms,
                )
            result = SubtaskResult(
                **base,
                success=True,
                summary=summary,
                stop_reason=agent.stop_reason,
                memory=remembered,
                memory_error=problem,
            )
            memory.update(remembered)
        results.append(result)
    final = final_output(template, results)
    return state.ended("answered", final, _record(found, results, memory, state.errors))


def _record(
    found: Decomposition, results: list[SubtaskResult], memory: dict[str, Any], errors: list[str]
) -> dict[str, Any]:
    return {
        "errors": list(errors),
        "plan": found.plan,
        "strategic_plan": found.strategic_plan,
        "rationale": found.rationale,
        "subtasks": list(found.subtasks),
        "results": [result.to_dict() for result in results],
        "working_memory": dict(memory),
    }
