"""MCP endpoint of LocalGym: handshake, sessions, versions, tools, JSON-RPC errors."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from eog_core.local import (
    LATEST_PROTOCOL_VERSION,
    MISSING_DATABASE_ID_TEXT,
    SUPPORTED_PROTOCOL_VERSIONS,
    LocalGym,
)

DB = {"x-database-id": "db_1"}


async def test_handshake_json_mode(gym: LocalGym, mcp: Any, http: aiohttp.ClientSession) -> None:
    client = mcp(gym)
    async with http.post(
        gym.mcp_url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t"},
            },
        },
        headers={"Accept": "application/json, text/event-stream"},
    ) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
        session_id = response.headers["mcp-session-id"]
        body = await response.json()
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "test-gym", "version": "0.1.0"},
        },
    }
    client.session_id = session_id
    status, _, messages = await client.post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert (status, messages) == (202, [])
    assert gym.session_ids() == [session_id]


async def test_handshake_sse_mode_sends_noise_before_the_answer(
    make_gym: Any, http: aiohttp.ClientSession
) -> None:
    gym = await make_gym(response_mode="sse")
    message = {"jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": {}}
    async with http.post(gym.mcp_url, json=message) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        assert response.headers["mcp-session-id"]
        text = await response.text()
    assert text.startswith(":")
    assert "event: message\n" in text
    events = [
        json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")
    ]
    assert [event.get("method") for event in events] == ["notifications/message", None]
    assert events[-1]["id"] == "init-1"
    assert events[-1]["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION


async def test_sse_without_noise(make_gym: Any, mcp: Any) -> None:
    gym = await make_gym(response_mode="sse", sse_noise=False)
    client = mcp(gym)
    await client.initialize()
    _, _, messages = await client.post({"jsonrpc": "2.0", "id": 99, "method": "ping"})
    assert messages == [{"jsonrpc": "2.0", "id": 99, "result": {}}]


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        *[(version, version) for version in SUPPORTED_PROTOCOL_VERSIONS],
        ("1999-01-01", LATEST_PROTOCOL_VERSION),
        (None, LATEST_PROTOCOL_VERSION),
    ],
)
async def test_version_negotiation(
    gym: LocalGym, mcp: Any, requested: str | None, negotiated: str
) -> None:
    client = mcp(gym)
    result = await client.initialize(requested)
    assert result["protocolVersion"] == negotiated


async def test_each_initialize_opens_a_new_session(gym: LocalGym, mcp: Any) -> None:
    first, second = mcp(gym), mcp(gym)
    await first.initialize()
    await second.initialize()
    assert first.session_id != second.session_id
    assert sorted(gym.session_ids()) == sorted([first.session_id, second.session_id])


async def test_session_id_rules(mode_gym: LocalGym, mcp: Any) -> None:
    client = mcp(mode_gym)
    await client.initialize()
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    real = client.session_id
    client.session_id = None
    status, _, messages = await client.post(ping)
    assert status == 400
    assert messages[0]["error"]["code"] == -32000
    client.session_id = "not-a-session"
    status, _, messages = await client.post(ping)
    assert status == 404
    assert messages[0]["id"] == 7
    client.session_id = real
    status, _, messages = await client.post(ping)
    assert status == 200
    assert [m for m in messages if m.get("id") == 7] == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


async def test_protocol_version_header_checked_from_2025_06_18(gym: LocalGym, mcp: Any) -> None:
    modern = mcp(gym)
    await modern.initialize("2025-06-18")
    status, _, messages = await modern.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"MCP-Protocol-Version": "2025-03-26"}
    )
    assert status == 400
    assert "protocol version" in messages[0]["error"]["message"]
    assert (await modern.rpc("ping"))["result"] == {}
    # Before 2025-06-18 the header is not part of the protocol and is ignored.
    legacy = mcp(gym)
    await legacy.initialize("2025-03-26")
    status, _, _ = await legacy.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"MCP-Protocol-Version": "garbage"}
    )
    assert status == 200


async def test_delete_ends_the_session(
    gym: LocalGym, mcp: Any, http: aiohttp.ClientSession
) -> None:
    client = mcp(gym)
    await client.initialize()
    async with http.delete(gym.mcp_url, headers={"mcp-session-id": client.session_id}) as response:
        assert response.status in (200, 204)
    assert gym.session_ids() == []
    status, _, _ = await client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert status == 404
    async with http.delete(gym.mcp_url, headers={"mcp-session-id": client.session_id}) as response:
        assert response.status == 404
    async with http.delete(gym.mcp_url) as response:
        assert response.status == 400


async def test_expired_sessions_get_404_then_reinitialize_works(gym: LocalGym, mcp: Any) -> None:
    client = mcp(gym)
    await client.initialize()
    assert gym.expire_sessions() == 1
    status, _, messages = await client.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert status == 404
    assert messages[0]["error"]["code"] == -32001
    await client.initialize()
    assert (await client.rpc("ping"))["result"] == {}


async def test_tools_list(mode_gym: LocalGym, mcp: Any) -> None:
    client = mcp(mode_gym)
    await client.initialize()
    tools = (await client.rpc("tools/list"))["result"]["tools"]
    assert [tool["name"] for tool in tools] == [
        "add_item",
        "list_items",
        "whoami",
        "explode",
        "refuse",
    ]
    add_item = tools[0]
    assert add_item["description"] == "Insert an item."
    assert add_item["inputSchema"]["required"] == ["name", "qty"]
    assert mode_gym.method_counts["tools/list"] == 1


async def test_tool_call_structured_and_text_results(
    mode_gym: LocalGym, mcp: Any, seed: Any
) -> None:
    await seed(mode_gym, "db_1")
    client = mcp(mode_gym)
    await client.initialize()
    result = await client.call_tool("add_item", {"name": "washer", "qty": 5}, **DB)
    assert result["isError"] is False
    assert result["structuredContent"] == {"id": 3, "name": "washer", "qty": 5}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    result = await client.call_tool("list_items", **DB)
    assert result["structuredContent"]["result"][-1] == {"name": "washer", "qty": 5}
    result = await client.call_tool("whoami", **DB, **{"x-user-email": "ann@example.test"})
    assert result == {
        "content": [{"type": "text", "text": "ann@example.test|db_1|whoami"}],
        "isError": False,
    }
    assert mode_gym.query("db_1", "SELECT COUNT(*) AS n FROM item") == [{"n": 3}]
    assert mode_gym.tool_executions == {"add_item": 1, "list_items": 1, "whoami": 1}


async def test_tool_call_requires_database_id(gym: LocalGym, mcp: Any, seed: Any) -> None:
    await seed(gym, "db_1")
    client = mcp(gym)
    await client.initialize()
    result = await client.call_tool("list_items")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": MISSING_DATABASE_ID_TEXT}]
    assert (
        MISSING_DATABASE_ID_TEXT == "Error: x-database-id header is required for database isolation"
    )
    result = await client.call_tool("list_items", **{"x-database-id": "db_unknown"})
    assert result["isError"] is True
    assert "db_unknown" in result["content"][0]["text"]
    assert gym.tool_executions == {}


@pytest.mark.parametrize(
    ("name", "arguments", "text_part"),
    [
        ("no_such_tool", {}, "Unknown tool: no_such_tool"),
        ("add_item", {"name": "x"}, "$.qty: required property is missing"),
        ("add_item", {"name": "x", "qty": "3"}, "$.qty: expected integer, got string"),
        ("add_item", {"name": "x", "qty": True}, "$.qty: expected integer, got boolean"),
        ("add_item", {"name": "x", "qty": 1, "extra": 1}, "$.extra: unexpected property"),
        ("explode", {}, "Error executing tool explode: RuntimeError: kaboom"),
        ("refuse", {}, "Error: not allowed today"),
    ],
)
async def test_tool_failures_are_results_with_is_error(
    gym: LocalGym, mcp: Any, seed: Any, name: str, arguments: dict[str, Any], text_part: str
) -> None:
    await seed(gym, "db_1")
    client = mcp(gym)
    await client.initialize()
    result = await client.call_tool(name, arguments, **DB)
    assert result["isError"] is True
    assert text_part in result["content"][0]["text"]
    # A raising tool's writes are rolled back.
    assert gym.query("db_1", "SELECT COUNT(*) AS n FROM item") == [{"n": 2}]


async def test_json_rpc_errors(mode_gym: LocalGym, mcp: Any, http: aiohttp.ClientSession) -> None:
    client = mcp(mode_gym)
    await client.initialize()
    answer = await client.rpc("resources/list")
    assert answer["error"]["code"] == -32601
    answer = await client.rpc("tools/call", {"arguments": {}})
    assert answer["error"]["code"] == -32602
    headers = client.request_headers({"Content-Type": "application/json"})
    async with http.post(mode_gym.mcp_url, data=b"{not json", headers=headers) as response:
        assert response.status == 400
        body = await response.json()
    assert body["error"]["code"] == -32700
    assert body["id"] is None
    status, _, messages = await client.post({"id": 1, "method": "ping"})
    assert status == 400
    assert messages[0]["error"]["code"] == -32600
    status, _, messages = await client.post({"jsonrpc": "2.0", "method": "initialize"})
    assert status == 400
    assert messages[0]["error"]["code"] == -32600


async def test_client_responses_and_other_notifications_are_accepted(
    gym: LocalGym, mcp: Any
) -> None:
    client = mcp(gym)
    await client.initialize()
    status, _, _ = await client.post({"jsonrpc": "2.0", "id": 5, "result": {}})
    assert status == 202
    status, _, _ = await client.post({"jsonrpc": "2.0", "method": "notifications/cancelled"})
    assert status == 202


async def test_custom_mcp_path(make_gym: Any, mcp: Any, http: aiohttp.ClientSession) -> None:
    gym = await make_gym(mcp_path="/gym/mcp")
    assert gym.mcp_url.endswith("/gym/mcp")
    await mcp(gym).initialize()
    async with http.post(f"{gym.url}/mcp", json={}) as response:
        assert response.status == 404
