"""A rollout's MCP endpoint: Streamable HTTP, JSON answers or one SSE stream per request.

``initialize`` opens a session bound to this rollout (its id is refused on any
other rollout's endpoint); ``tools/list`` shows exactly the task's tools as
upstream shows them to the model (upstream's cleaned input schemas), plus
``finish`` when the gateway offers it; ``tools/call`` goes to the rollout's
task session; ``ping`` answers ``{}``. Answers are JSON unless the client
accepts only ``text/event-stream``. Protocol errors are JSON-RPC errors with a
clear message and an HTTP status (400, 404, 405, 413, 410 for a rollout that ended).
Reading and checking a message, the session check and the answers' text are the core
shared with LocalGym (:mod:`eog_core._mcp_server`).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from eog_core._mcp_server import (
    BAD_SESSION,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    RpcFailure,
    RpcRefusal,
    check_session,
    dumps,
    initialize_result,
    method_not_found,
    negotiate_version,
    parse_message,
    result_text,
    rpc_error,
    sse_event,
    tool_name,
)
from eog_core._version import __version__
from eog_core.errors import UsageError
from eog_core.gateway._http import Answer, Request, json_answer
from eog_core.gateway._rollout import EncodedResult, GatewayRollout, McpClientSession
from eog_core.tasks import ToolSpec

__all__ = ["FINISH_TOOL", "McpHandler", "mcp_tools"]

SERVER_INFO = {"name": "eog-core-gateway", "version": __version__}
FINISH_TOOL = {
    "name": "finish",
    "description": "End the task: give your final answer to the user. Call it once, last.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "Your final answer to the user."}
        },
        "required": ["answer"],
    },
}
MAX_SESSIONS = 16  # MCP sessions open at once on one rollout (each initialize opens one)
_JSON_TYPE = "application/json; charset=utf-8"
_SESSION_KEY = SESSION_HEADER.lower()  # request header names are lower-cased
_PROTOCOL_KEY = PROTOCOL_HEADER.lower()
_SSE_HEADERS = {"Cache-Control": "no-cache"}
_CLIENT_INFO_MAX = 512  # characters of a clientInfo kept in the record


def mcp_tools(tools: tuple[ToolSpec, ...], *, finish: bool) -> list[dict[str, Any]]:
    """``tools/list``: each tool with the input schema upstream gives the model, then
    ``finish`` when asked for (unless the task has a tool of that name: the task's wins)."""
    listed = [
        {"name": t.name, "description": t.description, "inputSchema": t.parameters()} for t in tools
    ]
    if finish and all(t.name != FINISH_TOOL["name"] for t in tools):
        listed.append(FINISH_TOOL)
    return listed


def _client_info(params: Mapping[str, Any]) -> dict[str, Any] | None:
    info = params.get("clientInfo")
    if not isinstance(info, Mapping):
        return None
    kept = {k: info[k] for k in ("name", "title", "version") if isinstance(info.get(k), str)}
    return {k: v[:_CLIENT_INFO_MAX] for k, v in kept.items()}


def error_response(request_id: Any, code: int, message: str, *, status: int) -> Answer:
    """A JSON-RPC error answer with an HTTP status (400 bad request, 404 no such session...)."""
    return json_answer(rpc_error(request_id, code, message), status)


def _refused(refusal: RpcRefusal) -> Answer:
    return json_answer(refusal.payload(), refusal.status)


def _wants_sse(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return (
        "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept
    )


Finisher = Callable[[GatewayRollout, str], Awaitable[Any]]


@attrs.define
class McpHandler:
    """POST, GET and DELETE on ``/rollouts/{id}/mcp`` of one gateway."""

    finish_tool: bool
    finish: Finisher

    async def post(self, request: Request, rollout: GatewayRollout, body: bytes) -> Answer:
        message = parse_message(body)
        if isinstance(message, RpcRefusal):
            return _refused(message)
        if message is None:
            return Answer(202)  # the client answering a server request: none sent
        if message.method == "initialize":
            return await self._initialize(request, rollout, message.request_id, message.params)
        found = self._session(request, rollout, message.request_id)
        if isinstance(found, Answer):
            return found
        rollout.touch()
        if not message.is_request:
            if message.method == "notifications/initialized":
                found.initialized = True
            return Answer(202)
        request_id = message.request_id
        method = message.method
        try:
            if method == "tools/call":  # (awaited here: one coroutine fewer a call)
                params = message.params
                name = tool_name(params)
                arguments = params.get("arguments")
                if self.finish_tool and name == "finish" and name not in rollout.session.tools:
                    result = await self._finish_call(rollout, arguments)
                else:
                    result = await rollout.call_tool(name, arguments, request_id)
            else:
                result = self._dispatch(rollout, method)
        except RpcFailure as failure:
            answer = result_text(request_id, failure)
        else:
            if isinstance(result, EncodedResult):
                shown = str(request_id) if type(request_id) is int else dumps(request_id)
                answer = f'{{"jsonrpc": "2.0", "id": {shown}, "result": {result.text}}}'
            else:
                answer = result_text(request_id, result)
        return _answer(request, answer, found.session_id)

    def delete(self, request: Request, rollout: GatewayRollout) -> Answer:
        found = self._session(request, rollout, None)
        if isinstance(found, Answer):
            return found
        del rollout.mcp_sessions[found.session_id]
        return Answer(200)

    async def _initialize(
        self, request: Request, rollout: GatewayRollout, request_id: Any, params: Mapping[str, Any]
    ) -> Answer:
        if len(rollout.mcp_sessions) >= MAX_SESSIONS:
            return error_response(
                request_id,
                BAD_SESSION,
                f"Bad Request: this rollout has "
                f"{MAX_SESSIONS} MCP sessions open; end one with DELETE",
                status=400,
            )
        session = McpClientSession(
            session_id=secrets.token_hex(16),
            protocol_version=negotiate_version(params.get("protocolVersion")),
            client_info=_client_info(params),
        )
        rollout.mcp_sessions[session.session_id] = session
        if rollout.client_info is None:
            rollout.client_info = session.client_info
        rollout.touch()
        result = initialize_result(
            session.protocol_version, SERVER_INFO, rollout.task.system_prompt or None
        )
        return _answer(
            request,
            result_text(request_id, result),
            session.session_id,
        )

    def _session(
        self, request: Request, rollout: GatewayRollout, request_id: Any
    ) -> McpClientSession | Answer:
        found = check_session(
            rollout.mcp_sessions,
            request.headers.get(_SESSION_KEY),
            request.headers.get(_PROTOCOL_KEY),
            request_id,
            not_found="Session not found on this rollout",
        )
        return _refused(found) if isinstance(found, RpcRefusal) else found

    def _dispatch(self, rollout: GatewayRollout, method: str) -> Any:
        """The result of a request other than ``tools/call``."""
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": mcp_tools(rollout.session.tools.tools, finish=self.finish_tool)}
        raise method_not_found(method)

    async def _finish_call(self, rollout: GatewayRollout, arguments: Any) -> Any:
        """``tools/call`` of the gateway's own ``finish`` tool."""
        answer = arguments.get("answer") if isinstance(arguments, dict) else None
        if not isinstance(answer, str):
            return {
                "content": [{"type": "text", "text": "Error: finish needs a string 'answer'"}],
                "isError": True,
            }
        try:
            await self.finish(rollout, answer)
        except UsageError:  # another request finished it meanwhile
            return {
                "content": [{"type": "text", "text": "Error: the rollout is already finishing"}],
                "isError": True,
            }
        return {"content": [{"type": "text", "text": "The task is finished."}], "isError": False}


def _answer(request: Request, body: str, session_id: str) -> Answer:
    """One JSON-RPC answer (``body``, JSON text): plain JSON, or one SSE event (the stream
    then ends: one answer per request)."""
    if not _wants_sse(request):
        return Answer(
            200, body.encode(), content_type=_JSON_TYPE, headers={SESSION_HEADER: session_id}
        )
    return Answer(
        200,
        sse_event(body),
        content_type="text/event-stream",
        headers={SESSION_HEADER: session_id, **_SSE_HEADERS},
    )
