"""Hostile JSON on the gateway: lone surrogates and deep nesting get a 400, never a 500.

Before the one MCP core, a lone surrogate in ``clientInfo.name`` made ``GET /rollouts`` and
``finish`` answer 500 (the answer could not encode), a lone-surrogate JSON-RPC id made
``tools/call`` answer 500 after the call had run on the gym, and a deeply nested body
answered 500 with a traceback per request.
"""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest

from eog_core._json import MAX_DEPTH
from eog_core._mcp_server import dumps
from eog_core.gateway import Gateway
from eog_core.local import LocalGym
from tests.gateway.test_gateway_hostile import initialize, open_rollout, rpc

LONE_NAME = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "\\ud800", "version": "1"}}}'
)
LONE_ID = (
    b'{"jsonrpc": "2.0", "id": "\\udc00", "method": "tools/call", '
    b'"params": {"name": "find_account", "arguments": {"name": "Harbor Lane"}}}'
)
DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def _no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_lone_surrogate_client_name_is_refused_and_listing_still_answers(
    gateway: Gateway, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    rollout = await open_rollout(http, gateway)
    status, body = await rpc(http, rollout["mcp_url"], None, None, raw=LONE_NAME)
    assert status == 400 and body["error"]["code"] == -32700
    assert "surrogate" in body["error"]["message"]
    async with http.get(f"{gateway.url}/rollouts") as response:
        assert response.status == 200
        assert (await response.json())["rollouts"][0]["mcp_client"] is None
    async with http.post(
        f"{gateway.url}/rollouts/{rollout['rollout_id']}/finish", json={}
    ) as response:
        assert response.status == 200
    _no_errors_logged(caplog)


async def test_a_lone_surrogate_id_is_refused_before_the_gym_runs_anything(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    rollout = await open_rollout(http, gateway)
    session_id = await initialize(http, rollout["mcp_url"])
    status, body = await rpc(http, rollout["mcp_url"], session_id, None, raw=LONE_ID)
    assert status == 400 and body["error"]["code"] == -32700
    assert gym.tool_executions == {}
    _no_errors_logged(caplog)


@pytest.mark.parametrize("deep", [DEEP, DEEP_OBJECT], ids=["array", "object"])
async def test_deep_nesting_is_a_parse_error_on_mcp_and_a_400_on_control(
    gateway: Gateway, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture, deep: bytes
) -> None:
    rollout = await open_rollout(http, gateway)
    session_id = await initialize(http, rollout["mcp_url"])
    status, body = await rpc(http, rollout["mcp_url"], session_id, None, raw=deep)
    assert status == 400 and body["error"]["code"] == -32700
    assert "nested deeper" in body["error"]["message"]
    async with http.post(
        f"{gateway.url}/rollouts/{rollout['rollout_id']}/finish",
        data=deep,
        headers={"Content-Type": "application/json"},
    ) as response:
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "bad_request"
    _no_errors_logged(caplog)


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\u2028", "é😀"])
def test_every_answer_encodes_and_reads_back_equal(text: str) -> None:
    value = {"jsonrpc": "2.0", "id": text, "result": {"clientInfo": {"name": text}}}
    encoded = dumps(value).encode("utf-8")  # never UnicodeEncodeError
    assert json.loads(encoded) == value


async def test_arguments_as_deep_as_the_client_sends_are_read_and_reach_the_gym(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    # the arguments object nests MAX_DEPTH levels; the message, params and arguments add 3
    nested: object = []
    for _ in range(MAX_DEPTH - 2):
        nested = [nested]
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "find_account", "arguments": {"name": "Harbor Lane", "x": nested}},
    }
    rollout = await open_rollout(http, gateway)
    session_id = await initialize(http, rollout["mcp_url"])
    status, body = await rpc(http, rollout["mcp_url"], session_id, message)
    assert status == 200 and "result" in body
    assert gym.method_counts["tools/call"] == 1  # read, checked and sent on
