"""A scripted OpenAI-compatible model server (aiohttp): ``eog-core serve-model``, tests, benchmarks.

It speaks Chat Completions (``POST /v1/chat/completions``), Responses
(``POST /v1/responses``) and ``GET /v1/models``. The request's ``model`` names a
script (any other name plays ``default_script``): a list of turns, each a list of
tool calls (answered in parallel, in one message), a final text, a
:class:`CutOff` text (the output-token limit hit: ``finish_reason: "length"``,
Responses ``status: "incomplete"``), or ``"overflow"``. A planner request, or a
``decomposing`` memory question (``eog_core.local._roles``), plays ``plans`` instead, one
answer by model name; a ``decomposing`` sub-agent plays its part's script. The
turn is read from the conversation the client sends back (the number of assistant turns so far), so
the server keeps no per-rollout state and checks, like OpenAI does, that every
earlier tool call has its output. Fault knobs: the next N requests answer a
status and body (429 with ``Retry-After``, llama.cpp's 500 for a tool call it
could not parse...), or sleep; ``service_time`` delays every answer. Usage
carries cached and reasoning tokens.

The ``demo`` script plays the demo task's correct trajectory; ``noop`` answers at
once without acting.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from aiohttp import web

from eog_core._json import JsonInputError, loads_untrusted
from eog_core.local._roles import (
    answered_from_plans,
    demo_part_scripts,
    demo_plans,
    planned_answer,
    script_name,
)
from eog_core.local.demo import load_demo_trajectory

__all__ = ["FINAL_TEXT", "CutOff", "ModelFault", "ScriptedModel", "Turn", "demo_scripts"]


@attrs.frozen
class ModelFault:
    """What one request answers instead of its turn: ``status`` and ``body``, after ``delay``."""

    status: int = 500
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: Mapping[str, Any] = attrs.field(
        factory=lambda: {"error": {"message": "scripted failure"}}
    )
    delay: float = 0.0


@attrs.frozen
class CutOff:
    """A final answer cut off by the output-token limit."""

    text: str


Turn = list[dict[str, Any]] | str | CutOff | ModelFault
"""Tool calls ``[{"name", "arguments"}]`` answered together, the final answer text, a cut-off
one, or an error answer at that turn (a server's own status and body)."""

FINAL_TEXT = "Done: the entitlement is active until 2027-06-30, a P2 case is open for Kenji."


def demo_scripts() -> dict[str, list[Turn]]:
    """Scripts on the demo task: correct (with parallel calls), wrong, endless, overflowing."""
    steps = load_demo_trajectory()
    correct: list[Turn] = [
        steps[0:2],
        [steps[2]],
        [steps[3]],
        [steps[4]],
        [steps[5]],
        [steps[6]],
        steps[7:9],
        FINAL_TEXT,
    ]
    wrong_update = {**steps[3], "arguments": {**steps[3]["arguments"], "end_date": "2026-06-30"}}
    wrong: list[Turn] = [steps[0:2], [steps[2]], [wrong_update], "Done, I renewed it."]
    endless: list[Turn] = [[steps[6]]] * 200
    return {
        "demo": correct,
        "noop": ["Nothing to do."],
        "demo-correct": correct,
        "demo-wrong": wrong,
        "demo-endless": endless,
        "demo-overflow": [*correct[:2], "overflow"],
        "demo-answer": ["Nothing to do."],
        "demo-truncated": [steps[0:2], CutOff("Done: the entitlement is act")],
        "judge-9": ['{"score": 9, "reasoning": "states the case"}'],
        "judge-2": ['{"score": 2, "reasoning": "misses the case"}'],
        **demo_part_scripts(steps, FINAL_TEXT),
    }


OVERFLOW_BODY = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, "
        "your messages resulted in 9100 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@attrs.define
class ScriptedModel:
    """``async with ScriptedModel() as model: model.base_url`` (``http://127.0.0.1:PORT/v1``)."""

    scripts: dict[str, list[Turn]] = attrs.field(factory=demo_scripts)
    default_script: str | None = None
    """The script a request plays when its ``model`` names none (None: 404, as OpenAI)."""
    plans: dict[str, Turn] = attrs.field(factory=demo_plans)
    """Planner answers by model name (``eog_core.local._roles``: which requests are the planner's)."""
    default_plan: str = "demo-plan"
    host: str = "127.0.0.1"
    port: int = 0
    service_time: float = 0.0
    faults: deque[ModelFault] = attrs.field(factory=deque)
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    keep_bodies: bool = True
    keep_requests: bool = True
    api_key: str | None = attrs.field(default=None, repr=False)
    """When set, requests without ``Authorization: Bearer <api_key>`` get OpenAI's 401."""
    """Record every request in ``requests`` (tests); a long-running server turns it off."""
    in_flight: int = 0
    max_in_flight: int = 0
    _runner: web.AppRunner | None = None
    _bound_port: int | None = None
    _ids: itertools.count[int] = attrs.field(factory=itertools.count)
    _stopping: asyncio.Event = attrs.field(factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        if self._bound_port is None:
            raise RuntimeError("the scripted model is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._bound_port}/v1"

    def fail_next(self, count: int = 1, **fault: Any) -> None:
        self.faults.extend(ModelFault(**fault) for _ in range(count))

    async def __aenter__(self) -> ScriptedModel:
        app = web.Application(client_max_size=64 * 2**20)  # long conversations
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        self._bound_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    def _refused_key(self, request: web.Request) -> web.Response | None:
        if self.api_key is None or request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return web.json_response(
            {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            status=401,
        )

    async def _models(self, request: web.Request) -> web.Response:
        if (refused := self._refused_key(request)) is not None:
            return refused
        names = sorted(n for n in self.scripts.keys() | self.plans.keys() if "#" not in n)
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": name, "object": "model", "owned_by": "eog-core"} for name in names],
            }
        )

    async def __aexit__(self, *exc: object) -> None:
        self._stopping.set()  # answers still sleeping end now
        if self._runner is not None:
            await self._runner.cleanup()

    async def _common(self, request: web.Request, api: str) -> tuple[Any, web.Response | None]:
        if (refused := self._refused_key(request)) is not None:
            return {}, refused
        try:
            body = loads_untrusted(await request.read())  # nesting past the limit: 400, not 500
        except JsonInputError:
            return {}, web.json_response({"error": {"message": "the body is not JSON"}}, status=400)
        if not isinstance(body, dict):
            return {}, web.json_response(
                {"error": {"message": "the body is not an object"}}, status=400
            )
        if self.keep_requests:
            self.requests.append(
                {
                    "api": api,
                    "time": time.monotonic(),
                    "authorization": request.headers.get("Authorization"),
                    "body": body if self.keep_bodies else None,
                }
            )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.service_time:
                await self._pause(self.service_time)
            if self.faults:
                fault = self.faults.popleft()
                if fault.delay:
                    await self._pause(fault.delay)
                if fault.status != 200:
                    return body, web.json_response(
                        dict(fault.body), status=fault.status, headers=dict(fault.headers)
                    )
        finally:
            self.in_flight -= 1
        return body, None

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _turn(
        self, body: Mapping[str, Any], done: int, *, planner: bool = False
    ) -> list[dict[str, Any]] | str | CutOff | web.Response:
        script: list[Turn] | None
        if planner:
            script = [planned_answer(body, self.plans, self.default_plan)]
        else:
            script = self.scripts.get(script_name(body, self.scripts))
        if script is None and self.default_script is not None:
            default = {**body, "model": self.default_script}
            script = self.scripts[script_name(default, self.scripts)]
        if script is None:
            return web.json_response(
                {
                    "error": {
                        "message": f"model {body.get('model')!r} does not exist",
                        "code": "model_not_found",
                    }
                },
                status=404,
            )
        turn = script[min(done, len(script) - 1)]
        if turn == "overflow":
            return web.json_response(OVERFLOW_BODY, status=400)
        if isinstance(turn, ModelFault):
            return web.json_response(
                dict(turn.body), status=turn.status, headers=dict(turn.headers)
            )
        return turn

    def _usage(self, body: Mapping[str, Any], responses: bool) -> dict[str, Any]:
        prompt = len(json.dumps(body)) // 4
        if responses:
            return {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 64},
                "output_tokens": 20,
                "output_tokens_details": {"reasoning_tokens": 7},
                "total_tokens": prompt + 20,
            }
        return {
            "prompt_tokens": prompt,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens": 20,
            "completion_tokens_details": {"reasoning_tokens": 7},
            "total_tokens": prompt + 20,
        }

    async def _chat(self, request: web.Request) -> web.Response:
        body, failed = await self._common(request, "chat")
        if failed is not None:
            return failed
        messages = body.get("messages") or []
        planner = answered_from_plans(body, self.plans)
        if not planner and (problem := _check_chat(messages)):
            return web.json_response({"error": {"message": problem}}, status=400)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        turn = self._turn(body, done, planner=planner)
        if isinstance(turn, web.Response):
            return turn
        text = turn.text if isinstance(turn, CutOff) else turn if isinstance(turn, str) else None
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = (
            "length" if isinstance(turn, CutOff) else "stop" if text is not None else "tool_calls"
        )
        if isinstance(turn, list):
            message["tool_calls"] = [
                {
                    "id": f"call_t{done + 1}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(turn)
            ]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [choice],
            "usage": self._usage(body, responses=False),
        }
        if body.get(
            "return_token_ids"
        ):  # vLLM's shape: prompt ids at the top, output ids per choice
            answer["prompt_token_ids"] = list(range(1, 1 + len(messages)))
            choice["token_ids"] = [7, 8, 9]
        if body.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": t, "logprob": -0.5, "bytes": None, "top_logprobs": []}
                    for t in ("a", "b", "c")
                ]
            }
        return web.json_response(answer)

    async def _responses(self, request: web.Request) -> web.Response:
        body, failed = await self._common(request, "responses")
        if failed is not None:
            return failed
        items = body.get("input") or []
        if problem := _check_responses(items):
            return web.json_response({"error": {"message": problem}}, status=400)
        done = len(
            {i["call_id"].rsplit("_", 1)[0] for i in items if i.get("type") == "function_call"}
        )
        done += sum(1 for i in items if i.get("type") == "message" and i.get("role") == "assistant")
        turn = self._turn(body, done, planner=answered_from_plans(body, self.plans))
        if isinstance(turn, web.Response):
            return turn
        serial = next(self._ids)
        output: list[dict[str, Any]]
        cut = isinstance(turn, CutOff)
        if isinstance(turn, str | CutOff):
            text = turn.text if isinstance(turn, CutOff) else turn
            output = [
                {
                    "type": "message",
                    "id": f"msg_{serial}",
                    "role": "assistant",
                    "status": "incomplete" if cut else "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        else:
            output = [
                {
                    "type": "reasoning",
                    "id": f"rs_{serial}",
                    "summary": [{"type": "summary_text", "text": "Look it up first."}],
                }
            ]
            output += [
                {
                    "type": "function_call",
                    "id": f"fc_{serial}_{i}",
                    "call_id": f"call_t{done + 1}_{i}",
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"]),
                    "status": "completed",
                }
                for i, c in enumerate(turn)
            ]
        return web.json_response(
            {
                "id": f"resp_{serial}",
                "object": "response",
                "status": "incomplete" if cut else "completed",
                "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
                "model": body["model"],
                "output": output,
                "usage": self._usage(body, responses=True),
            }
        )


def _check_chat(messages: Sequence[Mapping[str, Any]]) -> str | None:
    if [m.get("role") for m in messages[:2]] != ["system", "user"]:
        return "conversation must start with the system and user prompts"
    open_calls: list[str] = []
    for message in messages[2:]:
        if message.get("role") == "assistant":
            if open_calls:
                return f"tool calls without output: {open_calls}"
            open_calls = [c["id"] for c in message.get("tool_calls") or ()]
        elif message.get("role") == "tool":
            if not open_calls or message.get("tool_call_id") != open_calls[0]:
                return f"unexpected tool output for {message.get('tool_call_id')}"
            open_calls.pop(0)
    return f"tool calls without output: {open_calls}" if open_calls else None


def _check_responses(items: Sequence[Mapping[str, Any]]) -> str | None:
    pending: list[str] = []
    for item in items:
        if item.get("type") == "function_call":
            pending.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            if not pending or item.get("call_id") != pending[0]:
                return f"unexpected function_call_output for {item.get('call_id')}"
            pending.pop(0)
    return f"function calls without output: {pending}" if pending else None
