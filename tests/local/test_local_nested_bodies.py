"""Hostile bodies on LocalGym: deep nesting, lone surrogates and malformed JSON-RPC get a 400
(a JSON-RPC error), never a 500 and a traceback; a tool's text with a lone surrogate still
answers (escaped)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import aiohttp
import pytest

from eog_core.local import LocalGym

from .conftest import McpTestClient, SeedFn, parse_sse

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
@pytest.mark.parametrize("route", ["/api/sql-runner", "/api/seed-database"])
async def test_rest_routes_answer_400(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    route: str,
    body: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with http.post(
        f"{gym.url}{route}", data=body, headers={"content-type": "application/json"}
    ) as response:
        assert (response.status, await response.json()) == (
            400,
            {"detail": "Request body must be JSON"},
        )
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
async def test_mcp_answers_a_json_rpc_parse_error(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    mcp: Callable[[LocalGym], McpTestClient],
    body: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = mcp(gym)
    await client.initialize()
    headers = client.request_headers({"Content-Type": "application/json"})
    async with http.post(gym.mcp_url, data=body, headers=headers) as response:
        assert response.status == 400
        answer = await response.json()
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\\udfff"}}',
        b'{"jsonrpc": "2.0", "id": "\\udc00", "method": "tools/call", '
        b'"params": {"name": "add_item", "arguments": {"name": "a", "qty": 1}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        b'"params": {"name": "add_item", "arguments": {"name": "\\ud83d", "qty": 1}}}',
    ],
    ids=["id", "params", "tools/call id", "tools/call argument"],
)
async def test_a_lone_surrogate_escape_is_a_parse_error_not_a_500(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    mcp: Callable[[LocalGym], McpTestClient],
    body: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = mcp(gym)
    await client.initialize()
    headers = client.request_headers({"Content-Type": "application/json"})
    async with http.post(gym.mcp_url, data=body, headers=headers) as response:
        assert response.status == 400
        answer = await response.json()
    assert answer["error"]["code"] == -32700 and "surrogate" in answer["error"]["message"]
    assert gym.tool_executions == {}  # refused before anything ran
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_lone_surrogate_client_name_is_refused_at_initialize(
    gym: LocalGym, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
        b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "\\ud800", "version": "1"}}}'
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with http.post(gym.mcp_url, data=body, headers=headers) as response:
        assert response.status == 400
        answer = await response.json()
    assert answer["error"]["code"] == -32700 and gym.session_ids() == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}', -32602),
        (b'{"jsonrpc": "2.0", "method": "initialize"}', -32600),
    ],
    ids=["batch", "float id", "object id", "bool id", "params list", "initialize notification"],
)
async def test_malformed_json_rpc_is_refused_alike_on_both_servers(
    gym: LocalGym,
    http: aiohttp.ClientSession,
    mcp: Callable[[LocalGym], McpTestClient],
    body: bytes,
    code: int,
) -> None:
    # the same core reads the gateway's bodies (tests/gateway/test_gateway_hostile.py)
    client = mcp(gym)
    await client.initialize()
    headers = client.request_headers({"Content-Type": "application/json"})
    async with http.post(gym.mcp_url, data=body, headers=headers) as response:
        assert response.status == 400
        answer = await response.json()
    assert answer["error"]["code"] == code and answer["id"] in (None, 1)


async def test_a_tool_s_text_with_a_lone_surrogate_is_answered_escaped(
    mode_gym: LocalGym,
    http: aiohttp.ClientSession,
    mcp: Callable[[LocalGym], McpTestClient],
    seed: SeedFn,
    caplog: pytest.LogCaptureFixture,
) -> None:
    @mode_gym.tool(name="half_emoji", description="Answers half an emoji.")
    def half_emoji(ctx: object) -> dict[str, str]:
        return {"text": "\ud83d and \u2028"}

    await seed(mode_gym)
    client = mcp(mode_gym)
    await client.initialize()
    message = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "half_emoji", "arguments": {}},
    }
    headers = client.request_headers({"x-database-id": "db_1"})
    async with http.post(mode_gym.mcp_url, json=message, headers=headers) as response:
        assert response.status == 200
        raw = await response.read()
    assert b"\\ud83d" in raw and "\u2028".encode() not in raw  # escaped: one line, UTF-8
    text = raw.decode("utf-8")
    [answer] = (
        [m for m in parse_sse(text) if m.get("id") == 5] if "event:" in text else [json.loads(text)]
    )
    assert json.loads(answer["result"]["content"][0]["text"]) == {"text": "\ud83d and \u2028"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/responses"])
async def test_the_scripted_model_answers_400(
    http: aiohttp.ClientSession, route: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by review: the scripted model read bodies with json.loads, so nesting past the
    interpreter's recursion limit was a 500 and a traceback."""
    from eog_core.local import ScriptedModel

    async with (
        ScriptedModel() as model,
        http.post(
            f"{model.base_url}{route.removeprefix('/v1')}",
            data=body,
            headers={"content-type": "application/json"},
        ) as response,
    ):
        assert response.status == 400
        assert (await response.json())["error"]["message"] == "the body is not JSON"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
