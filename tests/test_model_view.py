"""Observations, final answers and tools_used are what upstream's ReAct loop gives.

Replays tests/golden/model_view.json (written by
tests/golden/generators/gen_model_view.py, which runs upstream's orchestrator and
MCP client against a loopback gym); ``EOG_MODEL_VIEW_GOLDEN_FILE`` names another
file of the same format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from eog_core import final_answer, tool_observation, tools_used
from eog_core.errors import EogError, GymHTTPError, GymTimeoutError, JsonRpcError, UsageError
from eog_core.gym import GymClient, ToolCallRecord, ToolResult

GOLDEN_PATH = Path(
    os.environ.get("EOG_MODEL_VIEW_GOLDEN_FILE")
    or Path(__file__).parent / "golden" / "model_view.json"
)
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
OBSERVATIONS = {case["id"]: case for case in GOLDEN["observations"]}
RUNS = GOLDEN["runs"]


def test_golden_has_cases() -> None:
    assert (len(OBSERVATIONS), len(RUNS)) >= (16, 7) or "EOG_MODEL_VIEW_GOLDEN_FILE" in os.environ


@pytest.fixture
async def answering_gym() -> AsyncIterator[str]:
    """An MCP endpoint that answers tools/call ``<case id>`` with that case's recorded HTTP body."""

    async def mcp(request: web.Request) -> web.Response:
        message = await request.json()
        method = message.get("method")
        if method == "notifications/initialized":
            return web.Response(status=202)
        if method == "initialize":
            return web.json_response(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "serverInfo": {"name": "golden"},
                    },
                },
                headers={"mcp-session-id": "s1"},
            )
        case = OBSERVATIONS[message["params"]["name"]]
        body = (
            case["body"]
            .replace('"id":2', f'"id":{message["id"]}')
            .replace('"id": 2', f'"id": {message["id"]}')
        )
        return web.Response(
            status=case["status"],
            body=body.encode(),
            headers={"Content-Type": case["content_type"]},
        )

    async def end(request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_delete("/mcp", end)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


#: Answers our client refuses as malformed (upstream shows them anyway): a result that is
#: null. Its observation is then that of a failed request.
REFUSED = {"null_result"}


async def test_observations_through_our_client_match_upstream(answering_gym: str) -> None:
    seen: dict[str, str] = {}
    async with GymClient(answering_gym, name="golden") as client:
        for case_id in OBSERVATIONS:
            try:
                result: Any = await client.call_tool(case_id, {"n": 1}, database_id="db_1")
            except EogError as exc:
                result = exc
            seen[case_id] = tool_observation(result)
    expected = {case_id: case["observation"] for case_id, case in OBSERVATIONS.items()}
    differing = {case_id for case_id in expected if seen[case_id] != expected[case_id]}
    assert differing == REFUSED & set(expected)
    assert all(seen[case_id] == "{}" for case_id in differing)


def test_observation_of_a_raw_result_is_upstreams() -> None:
    for case in OBSERVATIONS.values():
        body = (
            json.loads(case["body"])
            if case["content_type"].startswith("application/json")
            else None
        )
        if case["status"] == 200 and isinstance(body, dict) and "result" in body:
            assert tool_observation(body["result"]) == case["observation"], case["id"]
            if isinstance(body["result"], dict):
                from_record = ToolResult.from_result(body["result"])
                assert tool_observation(from_record) == case["observation"], case["id"]


def test_failed_calls_are_observed_as_upstream_observes_them() -> None:
    assert (
        tool_observation(JsonRpcError("Unknown tool", code=-32602))
        == OBSERVATIONS["jsonrpc_error"]["observation"]
    )
    failure = GymHTTPError("HTTP 500: boom", status=500, detail="boom")
    assert tool_observation(failure) == OBSERVATIONS["http_500"]["observation"] == "{}"
    assert tool_observation(GymTimeoutError("slow")) == "{}"
    assert tool_observation(None) == "null"


def test_observation_of_something_not_json_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not JSON"):
        tool_observation({"when": object()})


def chat_transcript(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run as Chat-Completions messages."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "system"},
        {"role": "user", "content": "user"},
    ]
    observations = iter(run["observations"])
    call = 0
    for turn in run["turns"]:
        calls = []
        for name in turn["tool_calls"]:
            call += 1
            calls.append(
                {
                    "id": f"call_{call}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"n": call})},
                }
            )
        messages.append(
            {
                "role": "assistant",
                "content": turn["content"] or None,
                **({"tool_calls": calls} if calls else {}),
            }
        )
        messages.extend(
            {"role": "tool", "tool_call_id": c["id"], "content": next(observations)} for c in calls
        )
    return messages


def responses_items(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run as Responses-API items: input messages, then each turn's output and tool outputs."""
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "system", "type": "message"},
        {"role": "user", "content": "user", "type": "message"},
    ]
    observations = iter(run["observations"])
    call = 0
    for turn in run["turns"]:
        content = turn["content"]
        if isinstance(content, str):
            # a turn without calls always answers a message, if only an empty one
            empty = not content and turn["tool_calls"]
            parts = [] if empty else [{"type": "output_text", "text": content, "annotations": []}]
        else:
            parts = [
                {"type": "output_text", "text": b["text"], "annotations": []}
                for b in content
                if b["type"] == "text"
            ]
            items.append({"type": "reasoning", "id": "rs_1", "summary": []})
        if parts:
            items.append(
                {"type": "message", "role": "assistant", "status": "completed", "content": parts}
            )
        outputs = []
        for name in turn["tool_calls"]:
            call += 1
            items.append(
                {
                    "type": "function_call",
                    "call_id": f"call_{call}",
                    "name": name,
                    "arguments": "{}",
                }
            )
            outputs.append(
                {
                    "type": "function_call_output",
                    "call_id": f"call_{call}",
                    "output": next(observations),
                }
            )
        items.extend(outputs)
    return items


@pytest.mark.parametrize("run", RUNS, ids=[run["id"] for run in RUNS])
def test_final_answer_and_tools_used_match_upstream(run: dict[str, Any]) -> None:
    chat = chat_transcript(run)
    assert final_answer(chat) == run["final_response"]
    assert tools_used(chat) == run["tools_used"]
    items = responses_items(run)
    assert final_answer(items) == run["final_response"]
    assert final_answer({"id": "resp_1", "output": items}) == run["final_response"]
    assert tools_used(items) == run["tools_used"]
    records = [
        ToolCallRecord(name=name, arguments={}, gym="g", latency_ms=1.0, is_error=False)
        for name in run["verifier_tool_calls"]
    ]
    assert tools_used(records) == run["tools_used"]
    assert tools_used(run["verifier_tool_calls"]) == run["tools_used"]
    assert (
        tools_used({"name": name, "args": {}} for name in run["verifier_tool_calls"])
        == run["tools_used"]
    )


def test_a_turn_without_text_before_its_calls_still_ends_on_its_answer() -> None:
    items = [
        {"type": "function_call_output", "call_id": "c", "output": "{}"},
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ""}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "late"}],
        },
    ]
    assert final_answer(items) == ""  # the first text part of the turn, even when empty
    assert final_answer(items[:3]) == ""
    assert final_answer([{"role": "assistant", "content": "one message"}][0]) == "one message"
    assert final_answer([]) == final_answer(None) == ""
    assert final_answer("plain") == "plain"
    with pytest.raises(UsageError):
        final_answer(5)
    with pytest.raises(UsageError):
        tools_used("find_user")


def test_model_view_needs_no_aiohttp() -> None:
    code = (
        "import sys, eog_core; eog_core.tool_observation({}); eog_core.final_answer([]); "
        "eog_core.tools_used([]); eog_core.clean_schema({}); "
        "assert 'aiohttp' not in sys.modules and 'eog_core.gym' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
