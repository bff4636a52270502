"""The agent loop: ask the model, run its tool calls in order, until it answers.

Upstream's ReAct semantics (``orchestrators/react.py``): the conversation starts
with the task's system prompt and user prompt; each turn asks the model with the
task's tools; every tool call of an answer is executed, one after another in the
order the model wrote them, and its observation appended; the loop ends when an
answer has no tool calls or after ``max_turns`` answers. What the model sees
(tool schemas, observations) and what is scored (final answer, tools used) come
from :mod:`eog_core.model_view`, the one place every harness shares.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from eog_core._plumbing import iso_time
from eog_core.errors import ContextOverflowError, JsonRpcError, ToolCallParseError
from eog_core.gym import TaskSession
from eog_core.model_view import final_answer, tool_observation, tools_used
from eog_core.run._apis import Conversation, ModelTurn, Usage
from eog_core.run._model import ModelClient

__all__ = ["AgentRun", "StopReason", "model_tools", "run_agent"]

StopReason = Literal[
    "answered",
    "truncated",
    "max_turns",
    "context_overflow",
    "malformed_tool_call",
    "no_plan",
    "bad_decomposition",
]
"""How the loop ended: an answer without tool calls (``truncated`` when the output-token limit
cut it off), the turn cap, the context window, a tool call the server could not parse,
(``planner_react``) a planner answer that holds no plan, or (``decomposing``) no planner
answer that holds a decomposition."""

_CUT_OFF = frozenset({"length", "max_output_tokens", "max_tokens", "incomplete"})
"""``finish_reason`` (Chat) / ``incomplete_details.reason`` (Responses) of a cut-off answer."""


@attrs.frozen(kw_only=True)
class AgentRun:
    """What one agent loop did; ``turns`` is the JSON-ready transcript."""

    turns: tuple[dict[str, Any], ...]
    stop_reason: StopReason
    final_answer: str
    tools_used: tuple[str, ...]
    usage: Usage
    model_latency_ms: float
    tool_latency_ms: float
    tools_offered: int = 0
    overflow_detail: str | None = None
    malformed_tool_call: ToolCallParseError | None = None
    """With ``stop_reason == "malformed_tool_call"``: the server's error (status, detail, raw_text)."""
    orchestrator: str = "react"
    plan: str | None = None
    """``planner_react``: the planner's plan, as the executor was given it."""
    usage_by_role: Mapping[str, Usage] | None = None
    """``planner_react``: the usage of the planner's and the executor's answers apart."""
    user_prompt: str | None = None
    """``planner_react``: the user message the executor was given (the task with the plan)."""
    decomposition: Mapping[str, Any] | None = None
    """``decomposing``: the subtasks, each sub-agent's result and the working memory."""
    conversation: Conversation | None = attrs.field(default=None, eq=False, repr=False)
    """What the model was last sent and answered (``decomposing`` asks on after a sub-agent)."""


def _cut_off(answer: ModelTurn, limit: int | None) -> bool:
    """Did the output-token limit end this answer? The server says so (``finish_reason``
    ``length``, Responses ``incomplete``), or it used every token allowed (llama.cpp's
    Responses API reports a cut-off answer as ``completed``)."""
    if answer.finish_reason in _CUT_OFF:
        return True
    return limit is not None and answer.usage.output_tokens >= limit


def model_tools(
    session: TaskSession, client: ModelClient, *, raw: bool = False
) -> list[dict[str, Any]]:
    """The task's tools in the shape of the client's API: upstream-cleaned schemas unless ``raw``."""
    if client.settings.api == "responses":
        return session.tools.responses_tools(raw=raw)
    return session.tools.chat_tools(raw=raw)


async def run_agent(
    session: TaskSession,
    client: ModelClient,
    *,
    max_turns: int = 50,
    raw_schemas: bool = False,
    user_prompt: str | None = None,
) -> AgentRun:
    """Run the loop on an open session; gym and model failures propagate as EogError.

    ``user_prompt`` replaces the task's user prompt (``planner_react`` hands the executor the
    task with the plan).

    A gym's JSON-RPC error answer to a tool call is shown to the model (as upstream
    does, ``null``); any other gym failure ends the rollout (it is retried whole).
    """
    task = session.task
    tools = model_tools(session, client, raw=raw_schemas)
    user = (task.user_prompt or "") if user_prompt is None else user_prompt
    conversation = client.conversation(task.system_prompt or "", user, tools)
    turns: list[dict[str, Any]] = []
    usage = Usage()
    model_ms = tool_ms = 0.0
    stop: StopReason = "max_turns"
    overflow: str | None = None
    malformed: ToolCallParseError | None = None
    for number in range(1, max_turns + 1):
        try:
            reply = await client.ask(conversation, turn=number)
        except ContextOverflowError as exc:
            stop, overflow = "context_overflow", exc.detail
            break
        except ToolCallParseError as exc:
            stop, malformed = "malformed_tool_call", exc
            break
        answer = reply.turn
        usage += answer.usage
        model_ms += reply.latency_ms
        conversation.add_turn(answer)
        record: dict[str, Any] = {
            "turn": number,
            "started_at": iso_time(reply.started_at),
            "model_latency_ms": round(reply.latency_ms, 3),
            "attempts": reply.attempts,
            "usage": answer.usage.to_dict(),
            "finish_reason": answer.finish_reason,
            "text": answer.text,
            "reasoning": answer.reasoning,
            "tool_calls": [],
        }
        if reply.repaired:
            record["repaired_surrogates"] = reply.repaired
        if answer.token_data is not None:
            record["token_data"] = answer.token_data
        turns.append(record)
        if not answer.tool_calls:
            record["finished_at"] = iso_time(time.time())
            stop = (
                "truncated" if _cut_off(answer, client.settings.max_output_tokens) else "answered"
            )
            break
        for call in answer.tool_calls:
            called_at = time.time()
            try:
                result = await session.call_tool(call.name, call.arguments)
            except (
                JsonRpcError
            ) as exc:  # the gym answered the call with an error: the model sees it
                observation, is_error = tool_observation(exc), True
            else:
                observation, is_error = tool_observation(result), result.is_error
            routed = session.trajectory[-1]
            conversation.add_observation(call, observation)
            tool_ms += routed.latency_ms
            record["tool_calls"].append(
                {
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "started_at": iso_time(called_at),
                    "latency_ms": round(routed.latency_ms, 3),
                    "gym": routed.gym,
                    "is_error": is_error,
                    "observation": observation,
                }
            )
        record["finished_at"] = iso_time(time.time())
    return AgentRun(
        turns=tuple(turns),
        stop_reason=stop,
        final_answer=final_answer(conversation.transcript),
        tools_used=tuple(tools_used(session.trajectory)),
        usage=usage,
        model_latency_ms=model_ms,
        tool_latency_ms=tool_ms,
        tools_offered=len(tools),
        overflow_detail=overflow,
        malformed_tool_call=malformed,
        conversation=conversation,
    )
