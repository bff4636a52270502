"""Fixtures for the local gym tests: a running gym with test tools, and a tiny MCP client.

The client is deliberately separate from eog_core.gym: these tests pin the
server's wire behaviour with plain aiohttp requests.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from eog_core.local import LocalGym, ResponseMode, ToolContext, ToolError

SCHEMA = """
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL);
INSERT INTO item (name, qty) VALUES ('bolt', 10), ('nut', 20);
"""

ACCEPT = "application/json, text/event-stream"


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Every JSON message of an SSE body, in order (test-grade parser)."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


class McpTestClient:
    """Just enough MCP to drive the server: handshake, requests, notifications."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.headers: dict[str, str] = {}
        self._next_id = 0

    def request_headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": ACCEPT, **self.headers}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None and self.protocol_version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = self.protocol_version
        return {**headers, **(extra or {})}

    async def post(
        self, message: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
        """POST one message; returns (status, headers, messages in the answer)."""
        async with self.http.post(
            self.url, json=message, headers=self.request_headers(headers)
        ) as response:
            text = await response.text()
            content_type = response.headers.get("Content-Type", "")
            if content_type.startswith("text/event-stream"):
                messages = parse_sse(text)
            elif text:
                messages = [json.loads(text)]
            else:
                messages = []
            return response.status, dict(response.headers), messages

    async def rpc(
        self, method: str, params: dict[str, Any] | None = None, **headers: str
    ) -> dict[str, Any]:
        """Send a request and return the JSON-RPC response with our id (asserting HTTP 200)."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        status, _, messages = await self.post(message, headers)
        assert status == 200, messages
        answers = [m for m in messages if m.get("id") == self._next_id and "method" not in m]
        assert len(answers) == 1, messages
        return answers[0]

    async def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        self.session_id = None
        self.protocol_version = None
        self._next_id += 1
        status, headers, messages = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self._next_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "tests", "version": "0"},
                },
            }
        )
        assert status == 200, messages
        self.session_id = headers["mcp-session-id"]
        result: dict[str, Any] = next(m for m in messages if m.get("id") == self._next_id)["result"]
        self.protocol_version = result["protocolVersion"]
        status, _, _ = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202
        return result

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **headers: str
    ) -> dict[str, Any]:
        answer = await self.rpc(
            "tools/call", {"name": name, "arguments": arguments or {}}, **headers
        )
        result: dict[str, Any] = answer["result"]
        return result


def add_test_tools(gym: LocalGym) -> None:
    """A few tools covering sync/async bodies, structured results, failures and headers."""

    @gym.tool(
        name="add_item",
        description="Insert an item.",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["name", "qty"],
            "additionalProperties": False,
        },
    )
    def add_item(ctx: ToolContext, name: str, qty: int) -> dict[str, Any]:
        cursor = ctx.connection.execute("INSERT INTO item (name, qty) VALUES (?, ?)", (name, qty))
        return {"id": cursor.lastrowid, "name": name, "qty": qty}

    @gym.tool(name="list_items", description="All items.")
    async def list_items(ctx: ToolContext) -> list[dict[str, Any]]:
        rows = ctx.connection.execute("SELECT name, qty FROM item ORDER BY id").fetchall()
        return [{"name": name, "qty": qty} for name, qty in rows]

    @gym.tool(name="whoami", description="Echo the context.")
    def whoami(ctx: ToolContext) -> str:
        return f"{ctx.user_email}|{ctx.database_id}|{ctx.tool_name}"

    @gym.tool(name="explode", description="Writes, then raises.")
    def explode(ctx: ToolContext) -> None:
        ctx.connection.execute("INSERT INTO item (name, qty) VALUES ('ghost', 1)")
        raise RuntimeError("kaboom")

    @gym.tool(name="refuse", description="Raises a clean tool error.")
    def refuse(ctx: ToolContext) -> None:
        raise ToolError("not allowed today")


@pytest.fixture(params=["json", "sse"])
def response_mode(request: pytest.FixtureRequest) -> ResponseMode:
    mode: ResponseMode = request.param
    return mode


GymFactory = Callable[..., Awaitable[LocalGym]]


@pytest.fixture
async def make_gym() -> AsyncIterator[GymFactory]:
    """Start gyms with the test tools and the given options; all stop at teardown."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(**options: Any) -> LocalGym:
            options.setdefault("name", "test-gym")
            local = LocalGym(**options)
            add_test_tools(local)
            return await stack.enter_async_context(local)

        yield start


@pytest.fixture
async def gym(make_gym: GymFactory) -> LocalGym:
    return await make_gym()


@pytest.fixture
async def mode_gym(make_gym: GymFactory, response_mode: ResponseMode) -> LocalGym:
    """The test gym, once answering JSON and once SSE."""
    return await make_gym(response_mode=response_mode)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


SeedFn = Callable[..., Awaitable[str]]


@pytest.fixture
def seed(http: aiohttp.ClientSession) -> SeedFn:
    """Seed a database on a gym over REST; returns its id."""

    async def seed_database(gym: LocalGym, database_id: str = "db_1", sql: str = SCHEMA) -> str:
        body = {"database_id": database_id, "name": "t", "description": "t", "sql_content": sql}
        async with http.post(f"{gym.url}/api/seed-database", json=body) as response:
            assert response.status == 200, await response.text()
        return database_id

    return seed_database


@pytest.fixture
def mcp(http: aiohttp.ClientSession) -> Callable[[LocalGym], McpTestClient]:
    return lambda gym: McpTestClient(http, gym.mcp_url)
