"""One rollout handed out by the gateway: its task session, MCP sessions and transcript.

The agent's tool calls go through :meth:`GatewayRollout.call_tool`, which routes
them with :meth:`TaskSession.call_tool` (tools outside the task's set are answered
there and never reach a gym) and records each call in the shape ``eog-core run``
records a model's tool call. Gym failures are answered as ``isError`` results
that name only the failure's kind: gym URLs and database ids stay inside.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from eog_core._json import dumps_default
from eog_core._plumbing import iso_time
from eog_core.errors import EogError, JsonRpcError
from eog_core.gym import HeaderError, TaskSession, ToolCallRecord, gym_error_kind
from eog_core.model_view import tool_observation, tools_used
from eog_core.run import AgentRun, StateCapture, Usage, capture, capture_fields, damage_field
from eog_core.state import StateSnapshot
from eog_core.tasks import Task

__all__ = [
    "MAX_CALLS_PER_ROLLOUT",
    "EncodedResult",
    "GatewayRollout",
    "McpClientSession",
    "RolloutState",
]

MAX_CALLS_PER_ROLLOUT = 16
"""Default cap on one rollout's tool calls running at once (``--max-calls-per-rollout``)."""

RolloutState = Literal["active", "finishing", "finished", "abandoned"]


@attrs.define
class McpClientSession:
    """One MCP session an agent opened on a rollout's endpoint."""

    session_id: str
    protocol_version: str
    client_info: Mapping[str, Any] | None
    initialized: bool = False


def _error_text(text: str) -> str:
    return json.dumps({"content": [{"type": "text", "text": text}], "isError": True})


class EncodedResult:
    """An MCP result already encoded as JSON text (a gym's result is answered as the
    observation text recorded for it: encoded once, not twice). A plain class: one is made
    per tool call."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


@attrs.define(eq=False)
class GatewayRollout:
    """A live rollout: the task session, the agent's calls so far, who connected."""

    rollout_id: str
    mcp_key: str = attrs.field(repr=False)
    """The secret in the rollout's MCP URL (``/mcp/{mcp_key}``): listed nowhere, so knowing
    a rollout's id never reaches its MCP endpoint."""
    task: Task
    repeat: int
    session: TaskSession
    started: float = attrs.field(factory=time.time)
    state: RolloutState = "active"
    last_activity: float = attrs.field(factory=time.monotonic)
    mcp_sessions: dict[str, McpClientSession] = attrs.field(factory=dict)
    client_info: Mapping[str, Any] | None = None
    """The ``clientInfo`` of the first MCP client that initialized a session."""
    calls: list[tuple[Any, ToolCallRecord, float, float, bool, str]] = attrs.field(factory=list)
    """Each routed call: its JSON-RPC id, the session's record, start and end times, whether
    it answered an error, the observation upstream would show a model."""
    refused: int = 0
    before_state: StateSnapshot | str | None = None
    """With state capture: the state after seeding, or why it was not captured."""
    max_calls: int = MAX_CALLS_PER_ROLLOUT
    """Tool calls of this rollout running on the gym at once; more wait their turn."""
    _in_flight: int = 0
    _idle: asyncio.Event = attrs.field(factory=asyncio.Event)
    _slots: asyncio.Semaphore = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._idle.set()
        self._slots = asyncio.Semaphore(self.max_calls)

    @property
    def busy(self) -> bool:
        return self._in_flight > 0

    @property
    def in_flight(self) -> int:
        """Tool calls received and not yet answered (running on the gym or waiting their turn)."""
        return self._in_flight

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    async def settle(self) -> None:
        """Wait until no tool call is in flight (queued ones included: they were accepted)."""
        await self._idle.wait()

    async def call_tool(self, name: str, arguments: Any, call_id: Any) -> EncodedResult:
        """Route one ``tools/call``; returns the MCP result to answer (never raises EogError).

        At most :attr:`max_calls` of a rollout's calls run at once; the rest queue, in
        arrival order, so that one agent's burst cannot take the gym from other rollouts
        (nothing is refused: a refused call would look like a tool failure to the agent)."""
        self._in_flight += 1
        self._idle.clear()
        observation: str
        try:
            async with self._slots:
                called_at = time.time()
                recorded = len(self.session.trajectory)
                result = await self.session.call_tool(name, arguments)
        except JsonRpcError as exc:
            answer = _error_text(
                f"Error: the gym answered the call with JSON-RPC error {exc.code}: "
                f"{exc.rpc_message}"
            )
            observation, is_error = tool_observation(exc), True
        except HeaderError as exc:
            answer = _error_text(
                f"Error: the call was refused: header {exc.header!r} cannot be sent"
            )
            observation, is_error = tool_observation(exc), True
        except EogError as exc:
            answer = _error_text(
                f"Error: the gym could not complete the call ({gym_error_kind(exc)})"
            )
            observation, is_error = tool_observation(exc), True
        else:
            raw, is_error = result.raw, result.is_error
            # tool_observation's answer for a gym's result object, without its type dispatch
            observation = dumps_default(raw) if type(raw) is dict else tool_observation(result)
            answer = (
                observation
                if raw
                else json.dumps({"content": list(result.content), "isError": result.is_error})
            )
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()
            self.touch()
        if len(self.session.trajectory) == recorded:  # refused before routing (a closed session)
            return EncodedResult(answer)
        routed = self.session.trajectory[-1]
        if routed.local:
            self.refused += 1
        # kept raw; formatted once, when the record is built (the hot path stays lean)
        self.calls.append((call_id, routed, called_at, time.time(), is_error, observation))
        return EncodedResult(answer)

    def agent_run(self, final_answer: str | None, *, answered: bool) -> AgentRun:
        """What the agent did, as ``eog-core run`` records a model's loop: one turn per tool
        call (the gateway sees calls, not the model's messages), then the final answer."""
        turns: list[dict[str, Any]] = []
        for number, (call_id, routed, called_at, ended_at, is_error, observation) in enumerate(
            self.calls, start=1
        ):
            started = iso_time(called_at)
            entry = {
                "call_id": str(call_id),
                "name": routed.name,
                "arguments": json.dumps(routed.arguments, ensure_ascii=False, default=str),
                "started_at": started,
                "latency_ms": round(routed.latency_ms, 3),
                "gym": routed.gym,
                "is_error": is_error,
                "refused": routed.local,
                "observation": observation,
            }
            turns.append(
                {
                    "turn": number,
                    "started_at": started,
                    "model_latency_ms": None,
                    "attempts": 1,
                    "usage": Usage().to_dict(),
                    "finish_reason": "tool_calls",
                    "text": "",
                    "reasoning": None,
                    "tool_calls": [entry],
                    "finished_at": iso_time(ended_at),
                }
            )
        if answered:
            now = iso_time(time.time())
            turns.append(
                {
                    "turn": len(turns) + 1,
                    "started_at": now,
                    "model_latency_ms": None,
                    "attempts": 1,
                    "usage": Usage().to_dict(),
                    "finish_reason": "stop",
                    "text": final_answer or "",
                    "reasoning": None,
                    "tool_calls": [],
                    "finished_at": now,
                }
            )
        return AgentRun(
            turns=tuple(turns),
            stop_reason="answered" if answered else "max_turns",
            final_answer=final_answer or "",
            tools_used=tuple(tools_used(self.session.trajectory)),
            usage=Usage(),
            model_latency_ms=0.0,
            tool_latency_ms=sum(r.latency_ms for r in self.session.trajectory if not r.local),
            tools_offered=len(self.session.tools.tools),
        )

    def describe(self) -> dict[str, Any]:
        """The rollout as ``GET /rollouts`` lists it."""
        return {
            "rollout_id": self.rollout_id,
            "task_id": self.task.task_id,
            "repeat": self.repeat,
            "state": self.state,
            "tool_calls": len(self.calls),
            "refused_tool_calls": self.refused,
            "mcp_client": self.client_info,
            "idle_seconds": round(time.monotonic() - self.last_activity, 3),
        }

    async def capture_after(
        self, how: StateCapture | None, *, strict_success: bool
    ) -> dict[str, Any]:
        """The record's pending states (before deletion) and its damage verdict, or nothing
        without capture."""
        if how is None or self.before_state is None:
            return {}
        after = await capture(self.session, how.max_rows)
        return capture_fields(self.before_state, after) | damage_field(
            self.task,
            self.before_state,
            after,
            strict_success=strict_success,
            specs=how.damage_specs,
        )
