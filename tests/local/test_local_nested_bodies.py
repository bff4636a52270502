"""Deeply nested JSON bodies get LocalGym's 400 / JSON-RPC parse error, never a 500 and a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

import aiohttp
import pytest

from eog_core.local import LocalGym

from .conftest import McpTestClient

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
    ],
    ids=["id", "params"],
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
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
