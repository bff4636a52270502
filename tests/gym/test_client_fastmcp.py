"""GymClient against the official SDK's FastMCP server, in SSE and JSON answer styles."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from eog_core.errors import ClosedError, GymTimeoutError
from eog_core.gym import AiohttpTransport, AuthConfig, GymClient, Timeouts

from .conftest import UvicornThread


async def test_handshake_and_tool_list(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url, name="test") as client:
        assert client.mcp_session_id is None
        tools = await client.list_tools()
        assert client.mcp_session_id
        assert client.negotiated_version == "2025-06-18"
    assert {"add", "big", "chatty", "echo_headers", "fail", "hang"} <= {t["name"] for t in tools}
    add = next(t for t in tools if t["name"] == "add")
    assert {"a", "b"} == set(add["inputSchema"]["properties"])


@pytest.mark.parametrize(
    ("requested", "version_header"),
    [("2024-11-05", None), ("2025-03-26", None), ("2025-06-18", "2025-06-18")],
)
async def test_protocol_version_negotiation(
    fastmcp: UvicornThread, requested: str, version_header: str | None
) -> None:
    async with GymClient(fastmcp.url, protocol_version=requested) as client:
        result = await client.call_tool("echo_headers", {}, database_id="db_1")
        assert requested == client.negotiated_version
    assert version_header == result.structured.get("mcp-protocol-version")
    assert client.mcp_session_id is None


async def test_headers_are_per_call(fastmcp: UvicornThread) -> None:
    auth = AuthConfig(type="bearer", token="tok")
    async with GymClient(fastmcp.url, auth=auth) as client:
        first, second = await asyncio.gather(
            client.call_tool(
                "echo_headers",
                {},
                database_id="db_a",
                context={"user_email": " a@x.io ", "X-Tenant": "t1"},
            ),
            client.call_tool("echo_headers", {}, database_id="db_b"),
        )
    assert not first.is_error
    seen = first.structured
    assert seen["x-database-id"] == "db_a"
    assert seen["x-user-email"] == "a@x.io"
    assert seen["x-tenant"] == "t1"
    assert seen["authorization"] == "Bearer tok"
    assert seen["accept"] == "application/json, text/event-stream"
    assert seen["mcp-session-id"]
    assert json.loads(first.text) == seen
    assert second.structured["x-database-id"] == "db_b"
    assert "x-user-email" not in second.structured


async def test_tool_errors_are_results(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        result = await client.call_tool("fail", {"message": "kaboom"}, database_id="db")
    assert result.is_error
    assert "kaboom" in result.text
    assert result.raw["isError"] is True


async def test_notifications_before_the_result(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        result = await client.call_tool("chatty", {}, database_id="db")
    assert (result.text, result.is_error) == ("done", False)


async def test_structured_and_text_content(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        result = await client.call_tool("add", {"a": 2, "b": 40}, database_id="db")
    assert result.text == "42"
    assert result.structured == {"result": 42}
    assert tuple({k: item[k] for k in ("type", "text")} for item in result.content) == (
        {"type": "text", "text": "42"},
    )


async def test_five_megabyte_result(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        result = await client.call_tool("big", {"size": 5_000_000}, database_id="db")
    assert len(result.text) == 5_000_000
    assert set(result.text) == {"x"}


async def test_expired_session_is_reinitialized(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        await client.call_tool("add", {"a": 1, "b": 1}, database_id="db")
        old = client.mcp_session_id
        assert old is not None
        # End the session behind the client's back, as a gym restart would.
        async with (
            aiohttp.ClientSession() as raw,
            raw.delete(f"{fastmcp.url}/mcp", headers={"mcp-session-id": old}) as response,
        ):
            assert response.status == 200
        result = await client.call_tool("add", {"a": 2, "b": 3}, database_id="db")
        assert result.text == "5"
        assert client.mcp_session_id not in (None, old)


async def test_close_ends_the_session_and_refuses_reuse(fastmcp: UvicornThread) -> None:
    client = GymClient(fastmcp.url)
    await client.list_tools()
    session_id = client.mcp_session_id
    await client.aclose()
    await client.aclose()
    assert client.closed
    with pytest.raises(ClosedError):
        await client.list_tools()
    with pytest.raises(ClosedError):
        await client.call_tool("add", {"a": 1, "b": 2}, database_id="db")
    with pytest.raises(ClosedError):
        async with client:
            pass
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {
        "mcp-session-id": str(session_id),
        "Accept": "application/json, text/event-stream",
    }
    async with (
        aiohttp.ClientSession() as raw,
        raw.post(f"{fastmcp.url}/mcp", json=ping, headers=headers) as response,
    ):
        assert response.status == 404


async def test_timeout_is_typed(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url, timeouts=Timeouts(rpc=0.5)) as client:
        await client.list_tools()
        with pytest.raises(GymTimeoutError):
            await client.call_tool("hang", {}, database_id="db")


async def test_clients_share_one_pooled_session(fastmcp: UvicornThread) -> None:
    first, second = AiohttpTransport(), AiohttpTransport()
    async with (
        GymClient(fastmcp.url, transport=first) as a,
        GymClient(fastmcp.url, transport=second) as b,
    ):
        await asyncio.gather(a.list_tools(), b.list_tools())
        assert first.http_session is not None
        assert first.http_session is second.http_session
        assert a.mcp_session_id != b.mcp_session_id
    shared = first.http_session
    await first.aclose()
    assert not shared.closed
    await second.aclose()
    assert shared.closed


async def test_many_concurrent_calls_on_one_client(fastmcp: UvicornThread) -> None:
    async with GymClient(fastmcp.url) as client:
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": i, "b": 1}, database_id="db") for i in range(40))
        )
    assert [str(i + 1) for i in range(40)] == [r.text for r in results]
