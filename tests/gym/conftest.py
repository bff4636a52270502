"""Real servers on loopback: the official SDK's FastMCP (SSE and JSON) under uvicorn, and
the demo LocalGym with its task; ``eventually`` waits on what offers no event."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from eog_core import Task, load_task
from eog_core.gym import AiohttpTransport, LeanTransport
from eog_core.local import LocalGym, demo_paths


async def eventually(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Wait until ``condition`` holds (for peers' counters and tasks that offer no event)."""
    async with asyncio.timeout(limit):
        while not condition():  # noqa: ASYNC110 - bounded by the timeout above
            await asyncio.sleep(0.005)


TransportClass = type[AiohttpTransport] | type[LeanTransport]
TRANSPORTS: dict[str, TransportClass] = {"aiohttp": AiohttpTransport, "lean": LeanTransport}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport_class(request: pytest.FixtureRequest) -> TransportClass:
    """Both client transports: a test using this runs once with each."""
    return TRANSPORTS[request.param]


@pytest.fixture
async def demo_gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


@pytest.fixture
def demo_task() -> Task:
    return load_task(demo_paths().task)


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def build_fastmcp(*, json_response: bool) -> FastMCP:
    server = FastMCP("eog-test", json_response=json_response, log_level="WARNING")

    @server.tool()
    def echo_headers(ctx: Context[Any, Any, Any]) -> dict[str, str]:
        """Return the HTTP headers of the request that carried this call."""
        request = ctx.request_context.request
        assert request is not None
        return dict(request.headers)

    @server.tool()
    def fail(message: str) -> str:
        """Always raises."""
        raise ValueError(message)

    @server.tool()
    async def chatty(ctx: Context[Any, Any, Any]) -> str:
        """Send log notifications before the result."""
        await ctx.info("first note")
        await ctx.log("warning", "second note")
        return "done"

    @server.tool()
    def big(size: int) -> str:
        """A long text."""
        return "x" * size

    @server.tool()
    def add(a: int, b: int) -> int:
        """Sum of two numbers."""
        return a + b

    @server.tool()
    async def pings(ctx: Context[Any, Any, Any]) -> str:
        """Ping the client on this call's response stream, then answer."""
        await ctx.session.send_request(
            types.ServerRequest(types.PingRequest()),
            types.EmptyResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
        return "pong"

    @server.tool()
    async def pings_alone(ctx: Context[Any, Any, Any]) -> str:
        """Ping the client on the standalone GET stream (no related request), then answer."""
        await ctx.session.send_ping()
        return "pong"

    class Answer(BaseModel):
        answer: str

    @server.tool()
    async def elicits(ctx: Context[Any, Any, Any]) -> str:
        """Ask the client for input (elicitation/create) on this call's stream."""
        result = await ctx.elicit("Which one?", Answer)
        return f"elicited: {result.action}"

    @server.tool()
    async def samples(ctx: Context[Any, Any, Any]) -> str:
        """Ask the client's model (sampling/createMessage) on this call's stream."""
        message = types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text="hi")
        )
        await ctx.session.create_message([message], max_tokens=5, related_request_id=ctx.request_id)
        return "sampled"

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "unreachable"

    return server


class UvicornThread:
    """A uvicorn server on its own thread and loop, already listening when started."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> UvicornThread:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def fastmcp_sse() -> Iterator[UvicornThread]:
    with UvicornThread(build_fastmcp(json_response=False).streamable_http_app()) as server:
        yield server


@pytest.fixture(scope="session")
def fastmcp_json() -> Iterator[UvicornThread]:
    with UvicornThread(build_fastmcp(json_response=True).streamable_http_app()) as server:
        yield server


@pytest.fixture(params=["sse", "json"])
def fastmcp(
    request: pytest.FixtureRequest, fastmcp_sse: UvicornThread, fastmcp_json: UvicornThread
) -> UvicornThread:
    """Each test runs against both answer styles."""
    return fastmcp_sse if request.param == "sse" else fastmcp_json
