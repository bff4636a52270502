"""A client that goes away mid-SSE-answer is not an error of the gym: no ERROR traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import aiohttp
import pytest
import yarl

from eog_core.local import LocalGym, ToolContext

from .conftest import GymFactory, McpTestClient, SeedFn


async def test_a_client_cancelling_mid_stream_is_logged_at_debug_only(
    make_gym: GymFactory,
    http: aiohttp.ClientSession,
    seed: SeedFn,
    mcp: Callable[[LocalGym], McpTestClient],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="eog_core.local")
    gone = asyncio.Event()
    noticed = _Notice("client went away", gone)
    logging.getLogger("eog_core.local").addHandler(noticed)
    try:
        await _cancel_mid_answer(make_gym, http, seed, mcp, gone)
    finally:
        logging.getLogger("eog_core.local").removeHandler(noticed)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


class _Notice(logging.Handler):
    """Sets an event when a record with ``text`` is logged (the gym's only sign of it)."""

    def __init__(self, text: str, event: asyncio.Event) -> None:
        super().__init__(logging.DEBUG)
        self.text, self.event = text, event

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


async def _cancel_mid_answer(
    make_gym: GymFactory,
    http: aiohttp.ClientSession,
    seed: SeedFn,
    mcp: Callable[[LocalGym], McpTestClient],
    gone: asyncio.Event,
) -> None:
    gym = await make_gym(response_mode="sse")
    started, release = asyncio.Event(), asyncio.Event()

    @gym.tool(name="wait_for_release", description="Answers once the test lets it.")
    async def wait_for_release(ctx: ToolContext) -> str:
        started.set()
        await release.wait()
        return "done"

    await seed(gym)
    client = mcp(gym)
    await client.initialize()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "wait_for_release", "arguments": {}},
        }
    ).encode()
    url = yarl.URL(gym.url)
    headers = client.request_headers(
        {
            "Content-Type": "application/json",
            "x-database-id": "db_1",
            "Content-Length": str(len(body)),
            "Host": f"{url.host}:{url.port}",
        }
    )
    _, writer = await asyncio.open_connection(url.host, url.port)
    head = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
    writer.write(f"POST {gym.mcp_path} HTTP/1.1\r\n{head}\r\n".encode() + body)
    await writer.drain()
    async with asyncio.timeout(10):
        await started.wait()
        writer.transport.abort()  # the client cancels: the gym has not answered yet
        async with http.get(f"{gym.url}/health") as response:  # the gym's loop saw the reset
            assert response.status == 200
        release.set()
        await gone.wait()
    async with http.get(f"{gym.url}/health") as response:
        assert response.status == 200
