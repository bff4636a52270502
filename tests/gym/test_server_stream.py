"""MCP's standalone GET stream: opt-in (``server_stream=True``), its server requests answered.

Against the official SDK's FastMCP (whose ``send_ping()`` without a related request
goes to that stream) and LocalGym (which offers no stream: 405).
"""

from __future__ import annotations

import pytest

from eog_core.errors import GymTimeoutError
from eog_core.gym import GymClient, Timeouts, _mcp_stream, connection_pool
from eog_core.local import LocalGym

from .conftest import UvicornThread, eventually


@pytest.mark.parametrize("shared", [False, True], ids=["own-session", "shared-session"])
async def test_a_ping_on_the_standalone_stream_is_answered(
    fastmcp: UvicornThread, shared: bool
) -> None:
    async with connection_pool():
        client = GymClient(
            fastmcp.url, server_stream=True, share_mcp=shared, timeouts=Timeouts(rpc=20)
        )
        async with client:
            first = await client.call_tool("pings_alone", {}, database_id=None)
            again = await client.call_tool("pings_alone", {}, database_id=None)
            assert (first.is_error, first.text, again.text) == (False, "pong", "pong")
            assert client._session()._stream is not None
            assert client._session()._stream.listening
    await eventually(lambda: not _mcp_stream._LISTENING)  # closing stopped the listener


async def test_without_the_stream_such_a_call_times_out(fastmcp: UvicornThread) -> None:
    """The documented default: the stream is not opened, the server's ping is never
    answered, and the call ends at ``Timeouts.rpc``."""
    async with GymClient(fastmcp.url, timeouts=Timeouts(rpc=0.5)) as client:
        with pytest.raises(GymTimeoutError):
            await client.call_tool("pings_alone", {}, database_id=None)
        assert (await client.call_tool("add", {"a": 1, "b": 2}, database_id=None)).text == "3"


async def test_a_gym_offering_no_stream_is_asked_once_per_session() -> None:
    async with LocalGym.demo() as gym, GymClient(gym.url, server_stream=True) as client:
        for _ in range(3):
            assert {tool["name"] for tool in await client.list_tools()} >= {"find_account"}
        # initialize, initialized, one GET (405), three listings
        assert gym.request_counts[gym.mcp_path] == 2 + 1 + 3
        assert gym.method_counts["initialize"] == 1
        await eventually(lambda: not _mcp_stream._LISTENING)  # 405: not listening
