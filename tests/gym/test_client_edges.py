"""Odd answers and odd arguments: every failure is one of our typed errors."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from eog_core.errors import GymProtocolError, RequestError, UsageError
from eog_core.gym import GymClient, HeaderError, context_headers

from .fake_gym import FakeGym, running

Answer = Callable[[dict[str, Any]], Any]


@pytest.fixture
async def odd_gym() -> AsyncIterator[tuple[str, dict[str, Answer]]]:
    """An MCP endpoint whose answers to tools/list, tools/call and SQL the test sets."""
    answers: dict[str, Answer] = {}

    async def mcp(request: web.Request) -> web.Response:
        message = await request.json()
        method = message.get("method")
        if method == "notifications/initialized":
            return web.Response(status=202)
        if method == "initialize":
            result: Any = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "odd"},
            }
        else:
            result = answers[method](message)
        return web.json_response(
            {"jsonrpc": "2.0", "id": message["id"], "result": result},
            headers={"mcp-session-id": "s1"},
        )

    async def sql(request: web.Request) -> web.Response:
        return web.json_response({"detail": "warming up"}, status=503)

    async def end(request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_delete("/mcp", end)
    app.router.add_post("/api/sql-runner", sql)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", answers
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    "result", [{"content": 5}, {"content": None}, {"content": [], "isError": "yes"}]
)
async def test_malformed_tool_results_are_protocol_errors(
    odd_gym: tuple[str, dict[str, Answer]], result: dict[str, Any]
) -> None:
    url, answers = odd_gym
    answers["tools/call"] = lambda message: result
    async with GymClient(url, name="odd") as client:
        with pytest.raises(GymProtocolError, match="content list"):
            await client.call_tool("t", {}, database_id="db")


async def test_non_string_cursor_is_a_protocol_error(
    odd_gym: tuple[str, dict[str, Answer]],
) -> None:
    url, answers = odd_gym
    answers["tools/list"] = lambda message: {"tools": [], "nextCursor": ["x"]}
    async with GymClient(url, name="odd") as client:
        with pytest.raises(GymProtocolError, match="cursor"):
            await client.list_tools()


@pytest.mark.parametrize("arguments", [{"day": datetime.date(2026, 1, 1)}, {"x": float("nan")}])
async def test_arguments_that_are_not_json_are_refused_before_sending(
    odd_gym: tuple[str, dict[str, Answer]], arguments: dict[str, Any]
) -> None:
    url, answers = odd_gym
    calls: list[Any] = []
    answers["tools/call"] = lambda message: calls.append(message) or {"content": []}
    async with GymClient(url, name="odd") as client:
        with pytest.raises(RequestError, match="not valid JSON"):
            await client.call_tool("t", arguments, database_id="db")
    assert calls == []


async def test_unavailable_sql_runner_is_a_transport_failure(
    odd_gym: tuple[str, dict[str, Answer]],
) -> None:
    url, _ = odd_gym
    async with GymClient(url, name="odd") as client:
        outcome = await client.run_sql("SELECT 1", database_id="db")
    assert not outcome.success and outcome.error_kind == "transport" and outcome.status == 503


def test_bad_base_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="http"):
        GymClient("localhost:8001")


@pytest.mark.parametrize("context", [{"a:b": "x"}, {"user email": "a"}, {"x-ok": "line\nbreak"}])
@pytest.mark.parametrize("mode", ["upstream", "strict"])
def test_headers_that_would_forge_or_break_requests_are_refused(
    context: dict[str, str], mode: Any
) -> None:
    with pytest.raises(HeaderError):
        context_headers(context, mode=mode)


@pytest.mark.parametrize("value", ["a\x01b", "a\x7fb", "a\r\nx-forged: 1"])
def test_control_characters_in_header_values_are_refused(value: str) -> None:
    with pytest.raises(HeaderError, match="control character"):
        context_headers({"x-user-email": value})
    assert context_headers({"x-note": "tab\tis fine"}) == {"x-note": "tab\tis fine"}


async def test_database_id_must_be_sendable(odd_gym: tuple[str, dict[str, Answer]]) -> None:
    url, answers = odd_gym
    answers["tools/call"] = lambda message: {"content": []}
    async with GymClient(url, name="odd") as client:
        with pytest.raises(HeaderError, match="x-database-id"):
            await client.call_tool("t", {}, database_id="db\r\nx-evil: 1")
        with pytest.raises(HeaderError, match="x-database-id"):
            await client.run_sql("SELECT 1", database_id="db\n")


async def test_deeply_nested_arguments_are_a_request_error(
    odd_gym: tuple[str, dict[str, Answer]],
) -> None:
    url, answers = odd_gym
    answers["tools/call"] = lambda message: {"content": []}
    nested: Any = []
    for _ in range(100_000):
        nested = [nested]
    async with GymClient(url, name="odd") as client:
        with pytest.raises(RequestError):
            await client.call_tool("t", {"deep": nested}, database_id="db")


@pytest.fixture
async def bad_version_gym() -> AsyncIterator[str]:
    async def mcp(request: web.Request) -> web.Response:
        message = await request.json()
        if message.get("method") != "initialize":
            return web.Response(status=202)
        result = {"protocolVersion": "2025-06-18\r\nx-evil: 1", "capabilities": {}}
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": result})

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_unusable_protocol_version_is_a_protocol_error(bad_version_gym: str) -> None:
    async with GymClient(bad_version_gym, name="odd") as client:
        with pytest.raises(GymProtocolError, match="protocolVersion"):
            await client.list_tools()


async def test_context_changed_in_place_sends_its_new_values() -> None:
    """The per-client header memo reads the context anew: a caller may change its dict."""
    async with running(FakeGym()) as gym, GymClient(gym.url) as client:
        context = {"x-user": "alice"}
        await client.call_tool("ok", {}, database_id="db1", context=context)
        context["x-user"] = "bob"
        await client.call_tool("ok", {}, database_id="db1", context=context)
    sent = [h.get("x-user") for h in gym.headers_seen if "x-database-id" in h]
    assert sent == ["alice", "bob"]


async def test_equal_contexts_that_read_differently_send_their_own_text() -> None:
    async with running(FakeGym()) as gym, GymClient(gym.url) as client:
        for value in (1.0, 1, True):  # equal in Python, three different header values
            await client.call_tool("ok", {}, database_id="db1", context={"x-n": value})
    sent = [h.get("x-n") for h in gym.headers_seen if "x-database-id" in h]
    assert sent == ["1.0", "1", "True"]
