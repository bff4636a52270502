"""Tool calls per second against a FastMCP server (JSON answers), four clients side by side.

``pytest benchmarks/bench_gym_client.py`` starts the server in a subprocess (so
it does not share the GIL with the clients) and measures, at concurrency 1, 16
and 64: (a) a raw pooled aiohttp JSON-RPC loop, the floor; (b) the official SDK's
``ClientSession`` over ``streamable_http_client``; (c) a client opening a new
``aiohttp.ClientSession`` per request; (d) ``GymClient``; (e) upstream's own
pattern, a new ``httpx.AsyncClient`` per request, as its ``MCPClient`` does.
Each round is ``CALLS`` tool calls; ``extra_info["calls_per_second"]`` holds the rate.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest

from eog_core.gym import GymClient

CALLS = 320
ACCEPT = "application/json, text/event-stream"
Call = Callable[[int], Awaitable[None]]


def serve_stub(port: int) -> None:
    """A minimal aiohttp JSON-RPC server: isolates the clients' own cost."""
    from aiohttp import web

    async def handle(request: web.Request) -> web.StreamResponse:
        message = await request.json()
        method = message.get("method")
        if method == "notifications/initialized":
            return web.Response(status=202)
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stub", "version": "0"},
            }
            headers = {"mcp-session-id": "stub-session"}
            return web.json_response(
                {"jsonrpc": "2.0", "id": message["id"], "result": result}, headers=headers
            )
        if method == "tools/list":
            result = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}
        else:
            arguments = message["params"]["arguments"]
            total = str(arguments["a"] + arguments["b"])
            result = {"content": [{"type": "text", "text": total}], "isError": False}
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def end(request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_post("/mcp", handle)
    app.router.add_delete("/mcp", end)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def serve(port: int) -> None:
    """Run the benchmark server in the foreground (the subprocess entry point)."""
    import uvicorn
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("bench", json_response=True, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Sum of two numbers."""
        return a + b

    uvicorn.run(
        server.streamable_http_app(),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )


def spawn_server(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a benchmark server (``fastmcp-json`` or ``aiohttp-stub``) in a subprocess."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, kind, str(port)], stderr=subprocess.DEVNULL
    )
    return process, wait_for_port(process, port)


def wait_for_port(process: subprocess.Popen[bytes], port: int, timeout: float = 30.0) -> str:
    """The server's base URL once ``port`` accepts connections; kills ``process`` if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                process.wait()
                raise
            time.sleep(0.05)


@pytest.fixture(scope="module", params=["fastmcp-json", "aiohttp-stub"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The server kind and its base URL, in a subprocess."""
    process, url = spawn_server(request.param)
    try:
        yield request.param, url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _params(i: int) -> dict[str, Any]:
    return {"name": "add", "arguments": {"a": i, "b": 1}}


async def _raw_handshake(session: aiohttp.ClientSession, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    async with session.post(url, json=init, headers={"Accept": ACCEPT}) as response:
        await response.read()
        headers = {
            "Accept": ACCEPT,
            "mcp-session-id": response.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-06-18",
        }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with session.post(url, json=note, headers=headers) as response:
        await response.read()
    return headers


async def raw_pooled(stack: AsyncExitStack, url: str) -> Call:
    session = await stack.enter_async_context(aiohttp.ClientSession())
    headers = await _raw_handshake(session, f"{url}/mcp")

    async def call(i: int) -> None:
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": _params(i)}
        async with session.post(f"{url}/mcp", json=body, headers=headers) as response:
            answer = json.loads(await response.read())
        assert answer["result"]["content"][0]["text"] == str(i + 1)

    return call


async def official_sdk(stack: AsyncExitStack, url: str) -> Call:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    read, write, _ = await stack.enter_async_context(streamable_http_client(f"{url}/mcp"))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()

    async def call(i: int) -> None:
        result = await session.call_tool("add", {"a": i, "b": 1})
        assert result.content[0].text == str(i + 1)  # type: ignore[union-attr]

    return call


async def per_request_session(stack: AsyncExitStack, url: str) -> Call:
    async with aiohttp.ClientSession() as setup:
        headers = await _raw_handshake(setup, f"{url}/mcp")

    async def call(i: int) -> None:
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": _params(i)}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{url}/mcp", json=body, headers=headers) as response,
        ):
            answer = json.loads(await response.read())
        assert answer["result"]["content"][0]["text"] == str(i + 1)

    return call


async def upstream_httpx_per_request(stack: AsyncExitStack, url: str) -> Call:
    """Upstream's MCPClient exactly: a new ``httpx.AsyncClient`` for every request."""
    import httpx

    async with aiohttp.ClientSession() as setup:
        headers = await _raw_handshake(setup, f"{url}/mcp")

    async def call(i: int) -> None:
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": _params(i)}
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
            response = await client.post(f"{url}/mcp", json=body, headers=headers)
            answer = response.json()
        assert answer["result"]["content"][0]["text"] == str(i + 1)

    return call


async def gym_client(stack: AsyncExitStack, url: str) -> Call:
    client = await stack.enter_async_context(GymClient(url, name="bench"))
    await client.list_tools()

    async def call(i: int) -> None:
        result = await client.call_tool("add", {"a": i, "b": 1}, database_id="db_bench")
        assert result.text == str(i + 1)

    return call


CLIENTS = {
    "a-raw-aiohttp": raw_pooled,
    "b-official-sdk": official_sdk,
    "c-session-per-request": per_request_session,
    "d-gym-client": gym_client,
    "e-upstream-httpx-per-request": upstream_httpx_per_request,
}
SLOW_CLIENTS = {"e-upstream-httpx-per-request"}


async def _batch(call: Call, concurrency: int) -> None:
    async def worker(offset: int) -> None:
        for i in range(offset, CALLS, concurrency):
            await call(i)

    await asyncio.gather(*(worker(offset) for offset in range(concurrency)))


async def _hold(
    factory: Callable[[AsyncExitStack, str], Awaitable[Call]],
    url: str,
    ready: asyncio.Future[Call],
    done: asyncio.Event,
) -> None:
    """Open a client and keep it open until ``done``, all in one task (anyio needs that)."""
    async with AsyncExitStack() as stack:
        try:
            ready.set_result(await factory(stack, url))
        except BaseException as exc:
            ready.set_exception(exc)
            raise
        await done.wait()


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("concurrency", [1, 16, 64])
def test_tool_calls_per_second(
    benchmark: Any, server: tuple[str, str], client: str, concurrency: int
) -> None:
    kind, url = server
    benchmark.group = f"{kind}: tools/call x{CALLS}, concurrency {concurrency}"
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        ready: asyncio.Future[Call] = loop.create_future()
        done = asyncio.Event()
        holder = loop.create_task(_hold(CLIENTS[client], url, ready, done))
        call = runner.run(_wait(ready))
        try:
            rounds = 3 if client in SLOW_CLIENTS else 7
            benchmark.pedantic(
                lambda: runner.run(_batch(call, concurrency)), rounds=rounds, warmup_rounds=1
            )
        finally:
            done.set()
            runner.run(_wait(holder))
    benchmark.extra_info["calls_per_second"] = round(CALLS / benchmark.stats.stats.mean, 1)


async def _wait(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


if __name__ == "__main__":
    if sys.argv[1] == "aiohttp-stub":
        serve_stub(int(sys.argv[2]))
    else:
        serve(int(sys.argv[2]))
