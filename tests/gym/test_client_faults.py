"""Typed errors, retries and the never-twice rule, against a fake gym that misbehaves."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from aiohttp import web

from eog_core.errors import (
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    JsonRpcError,
)
from eog_core.gym import (
    AiohttpTransport,
    GymClient,
    HttpRequest,
    HttpResponse,
    RetryPolicy,
    Timeouts,
    connection_pool,
)

from .conftest import TransportClass, free_port
from .fake_gym import FakeGym, running

FAST_RETRY = RetryPolicy(attempts=3, initial_delay=0.0, max_delay=0.0)


@pytest.fixture
async def gym() -> AsyncIterator[FakeGym]:
    async with running(FakeGym()) as fake:
        yield fake


@pytest.fixture
async def client(gym: FakeGym, transport_class: TransportClass) -> AsyncIterator[GymClient]:
    transport = transport_class(retry=FAST_RETRY)
    async with GymClient(gym.url, name="fake", transport=transport) as gym_client:
        yield gym_client
    await transport.aclose()


async def test_dead_port_is_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with GymClient(url, name="dead", transport=AiohttpTransport(retry=FAST_RETRY)) as c:
        with pytest.raises(GymUnreachableError) as caught:
            await c.list_tools()
        assert ("dead", f"{url}/mcp") == (caught.value.gym, caught.value.url)
        with pytest.raises(GymUnreachableError):
            await c.call_tool("add", {}, database_id="db")
        assert await c.health() is False
        outcome = await c.run_sql("SELECT 1", database_id="db")
    assert (outcome.success, outcome.error_kind) == (False, "transport")


async def test_dropped_tool_call_is_never_sent_twice(gym: FakeGym, client: GymClient) -> None:
    with pytest.raises(GymProtocolError, match="connection lost"):
        await client.call_tool("drop", {}, database_id="db")
    assert gym.executions["drop"] == 1
    assert gym.methods == ["initialize", "notifications/initialized", "tools/call"]


async def test_dropped_idempotent_request_is_retried(gym: FakeGym, client: GymClient) -> None:
    gym.drop_tools_list = 2
    tools = await client.list_tools()
    assert [t["name"] for t in tools] == ["tool_0", "tool_1", "tool_2"]
    assert gym.methods.count("tools/list") == 5


async def test_retries_are_bounded(gym: FakeGym, client: GymClient) -> None:
    gym.drop_tools_list = 10
    with pytest.raises(GymProtocolError):
        await client.list_tools()
    assert gym.methods.count("tools/list") == 3


async def test_unavailable_is_retried_only_when_idempotent(gym: FakeGym, client: GymClient) -> None:
    gym.unavailable = 2
    await client.list_tools()
    with pytest.raises(GymHTTPError) as caught:
        await client.call_tool("unavailable", {}, database_id="db")
    assert (caught.value.status, caught.value.detail) == (503, "busy")
    assert gym.executions["unavailable"] == 1


async def test_http_error_carries_status_and_detail(gym: FakeGym, client: GymClient) -> None:
    with pytest.raises(GymHTTPError) as caught:
        await client.call_tool("http500", {}, database_id="db")
    assert (caught.value.status, caught.value.detail) == (500, "boom")
    assert caught.value.gym == "fake"


@pytest.mark.parametrize("tool", ["bad_json", "wrong_id", "sse_without_answer"])
async def test_unusable_answers_are_protocol_errors(client: GymClient, tool: str) -> None:
    with pytest.raises(GymProtocolError):
        await client.call_tool(tool, {}, database_id="db")


async def test_json_rpc_error_is_raised_typed(client: GymClient) -> None:
    with pytest.raises(JsonRpcError) as caught:
        await client.call_tool("rpc_error", {}, database_id="db")
    error = caught.value
    assert (error.code, error.rpc_message, error.data) == (-32602, "bad params", {"field": "x"})


async def test_sse_answer_among_notifications(client: GymClient) -> None:
    result = await client.call_tool("sse", {}, database_id="db")
    assert (result.text, result.is_error) == ("ran sse", False)


async def test_tool_list_follows_cursors(client: GymClient) -> None:
    assert [t["name"] for t in await client.list_tools()] == ["tool_0", "tool_1", "tool_2"]


async def test_expired_session_reinitializes_once_and_resends(
    gym: FakeGym, client: GymClient
) -> None:
    # a 404 in a session the server ended: the spec's "refused unread", so even a tool
    # call is sent again
    await client.list_tools()
    first = client.mcp_session_id
    assert first is not None
    gym.expired.add(first)
    result = await client.call_tool("add", {}, database_id="db")
    assert result.text == "ran add"
    assert gym.executions["add"] == 1
    assert client.mcp_session_id == gym.sessions[-1] != first
    assert gym.methods.count("initialize") == 2


async def test_old_servers_bad_session_reinitializes_but_never_resends_a_tool_call(
    gym: FakeGym, client: GymClient
) -> None:
    gym.expired_status, gym.expired_detail = 400, "Bad Request: No valid session ID"
    await client.list_tools()
    first = str(client.mcp_session_id)
    gym.expired.add(first)
    with pytest.raises(GymHTTPError) as caught:
        await client.call_tool("add", {}, database_id="db")
    assert caught.value.status == 400
    assert gym.methods.count("initialize") == 1
    result = await client.call_tool("add", {}, database_id="db")  # in a new session
    assert result.text == "ran add"
    assert gym.executions["add"] == 1
    assert client.mcp_session_id == gym.sessions[-1] != first
    assert gym.methods.count("initialize") == 2


async def test_old_servers_bad_session_resends_what_is_safe_to_repeat(
    gym: FakeGym, client: GymClient
) -> None:
    gym.expired_status, gym.expired_detail = 400, "Bad Request: No valid session ID"
    await client.list_tools()
    gym.expired.add(str(client.mcp_session_id))
    assert len(await client.list_tools(refresh=True)) == 3
    assert gym.methods.count("initialize") == 2


async def test_a_tool_that_ran_and_answered_400_session_runs_once(
    gym: FakeGym, client: GymClient
) -> None:
    # issue 29: a gym answering 400 with "session" in its message after running the
    # tool got a re-initialize and a second run
    with pytest.raises(GymHTTPError) as caught:
        await client.call_tool("session_400", {}, database_id="db")
    assert (caught.value.status, gym.executions["session_400"]) == (400, 1)
    await client.list_tools()  # the next request opens a new session
    with pytest.raises(GymHTTPError):
        await client.call_tool("session_400", {}, database_id="db")
    assert gym.executions["session_400"] == 2
    assert gym.methods.count("tools/call") == 2


async def test_session_expiring_again_is_not_a_loop(gym: FakeGym, client: GymClient) -> None:
    await client.list_tools()
    gym.expired.add(str(client.mcp_session_id))
    gym.expire_new_sessions = True
    with pytest.raises(GymHTTPError) as caught:
        await client.call_tool("add", {}, database_id="db")
    assert caught.value.status == 404
    assert gym.methods.count("initialize") == 2
    assert gym.executions["add"] == 0


async def test_bad_request_without_session_words_is_not_reinitialized(
    gym: FakeGym, client: GymClient
) -> None:
    gym.expired_status, gym.expired_detail = 400, "Unsupported protocol version"
    await client.list_tools()
    gym.expired.add(str(client.mcp_session_id))
    with pytest.raises(GymHTTPError):
        await client.list_tools()
    assert gym.methods.count("initialize") == 1


async def test_session_headers_on_every_later_request(gym: FakeGym, client: GymClient) -> None:
    await client.call_tool("add", {}, database_id="db")
    initialize, initialized, call = gym.headers_seen
    assert "mcp-session-id" not in initialize
    assert gym.sessions[0] == initialized["mcp-session-id"] == call["mcp-session-id"]
    assert call["MCP-Protocol-Version"] == "2025-06-18"
    assert call["Content-Type"] == "application/json"
    assert call["x-database-id"] == "db"
    assert "x-database-id" not in initialize


async def test_close_deletes_the_session_and_logs_failures(
    gym: FakeGym, caplog: pytest.LogCaptureFixture
) -> None:
    gym.mcp_delete_status = 500
    caplog.set_level(logging.INFO, logger="eog_core.gym")
    client = GymClient(gym.url, name="fake", timeouts=Timeouts(admin=5))
    await client.list_tools()
    await client.aclose()
    assert gym.methods[-1] == "DELETE"
    assert "ending the MCP session failed" in caplog.text


@attrs.define
class RecordingTransport:
    """A caller-supplied transport: records each request, delegates to the default one."""

    inner: AiohttpTransport = attrs.Factory(AiohttpTransport)
    seen: list[HttpRequest] = attrs.Factory(list)
    closed: bool = False

    async def send(self, request: HttpRequest) -> HttpResponse:
        self.seen.append(request)
        return await self.inner.send(request)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


async def test_transport_is_swappable_and_stays_the_callers(gym: FakeGym) -> None:
    transport = RecordingTransport()
    async with GymClient(gym.url, transport=transport) as client:
        await client.call_tool("add", {}, database_id="db")
    assert [(r.method, r.idempotent) for r in transport.seen] == [
        ("POST", True),
        ("POST", True),
        ("POST", False),
        ("DELETE", True),
    ]
    assert not transport.closed
    await transport.aclose()


@pytest.mark.parametrize("kind", ["default", "aiohttp"])
async def test_connection_pool_outlives_clients(gym: FakeGym, kind: str) -> None:
    connections: list[Any] = []
    async with connection_pool():
        for _ in range(2):
            transport = AiohttpTransport() if kind == "aiohttp" else None
            async with GymClient(gym.url, transport=transport) as client:
                await client.list_tools()
                used = client._transport
                connections.append(used.http_session if kind == "aiohttp" else used.lean)  # type: ignore[attr-defined]
            if transport is not None:
                await transport.aclose()
        first, second = connections
        assert first is second
        assert first is not None
        assert not first.closed
    assert first.closed


async def test_gym_gone_after_use_is_unreachable() -> None:
    transport = AiohttpTransport(retry=FAST_RETRY)
    async with running(FakeGym()) as fake:
        client = GymClient(fake.url, transport=transport)
        await client.call_tool("add", {}, database_id="db")
    # The pooled keep-alive connection now points at a stopped server.
    with pytest.raises(GymUnreachableError):
        await client.call_tool("add", {}, database_id="db")
    assert fake.executions["add"] == 1
    await client.aclose()
    await transport.aclose()


async def test_rpc_timeout_bounds_the_whole_call_retries_included() -> None:
    """``Timeouts.rpc`` bounds a whole call on an open session too: a busy gym that answers
    503 after 0.4 s each time ends in GymTimeoutError within the 1 s budget, not in a
    503 after three full attempts."""
    busy = False
    attempts = 0

    async def mcp(request: web.Request) -> web.StreamResponse:
        nonlocal attempts
        message = await request.json()
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {}}
            return web.json_response(
                {"jsonrpc": "2.0", "id": message["id"], "result": result},
                headers={"mcp-session-id": "s1"},
            )
        if "id" not in message:
            return web.Response(status=202)
        if busy:
            attempts += 1
            await asyncio.sleep(0.4)
            return web.json_response({"detail": "busy"}, status=503)
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_delete("/mcp", _ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with GymClient(url, name="busy", timeouts=Timeouts(rpc=1.0)) as client:
            await client.list_tools()  # the session is open: the fast path from here
            busy = True
            with pytest.raises(GymTimeoutError, match=r"within 1\.0s"):
                await client.list_tools()
    finally:
        await runner.cleanup()
    assert 1 <= attempts <= 3


async def _ok(request: web.Request) -> web.Response:
    return web.Response()
