"""Tool registry, argument checking and result shaping; the foreground serve()."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from typing import Any

import aiohttp
import pytest

from eog_core.local import LocalGym, ToolContext, ToolRegistry, serve
from eog_core.local._tools import tool_result, validate_arguments

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "size": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {
            "type": "object",
            "properties": {"email": {"type": ["string", "null"]}},
            "required": ["email"],
        },
        "mode": {"enum": ["a", "b"]},
    },
    "required": ["name"],
}


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({"name": "x"}, []),
        ({"name": "x", "size": 2.5, "tags": ["a"], "owner": {"email": None}, "mode": "b"}, []),
        ({"name": "x", "size": 3}, []),
        ({}, ["$.name: required property is missing"]),
        ({"name": 1}, ["$.name: expected string, got integer"]),
        ({"name": "x", "size": "big"}, ["$.size: expected number, got string"]),
        ({"name": "x", "size": False}, ["$.size: expected number, got boolean"]),
        ({"name": "x", "tags": ["a", 2]}, ["$.tags[1]: expected string, got integer"]),
        ({"name": "x", "owner": {}}, ["$.owner.email: required property is missing"]),
        (
            {"name": "x", "owner": {"email": 3}},
            ["$.owner.email: expected string or null, got integer"],
        ),
        ({"name": "x", "mode": "c"}, ['$.mode: "c" is not one of "a", "b"']),
        ({"name": "x", "unknown": 1}, []),  # open object: extra keys allowed
    ],
)
def test_validate_arguments(arguments: dict[str, Any], problems: list[str]) -> None:
    assert validate_arguments(SCHEMA, arguments) == problems


def test_integer_accepts_integral_floats_only() -> None:
    schema = {"type": "integer"}
    assert validate_arguments(schema, 2.0) == []
    assert validate_arguments(schema, 2.5) == ["$: expected integer, got number"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {"content": [], "isError": False}),
        ("hi", {"content": [{"type": "text", "text": "hi"}], "isError": False}),
        (
            {"a": 1},
            {
                "content": [{"type": "text", "text": '{"a": 1}'}],
                "structuredContent": {"a": 1},
                "isError": False,
            },
        ),
        (
            [1, 2],
            {
                "content": [{"type": "text", "text": "[1, 2]"}],
                "structuredContent": {"result": [1, 2]},
                "isError": False,
            },
        ),
        (
            7,
            {
                "content": [{"type": "text", "text": "7"}],
                "structuredContent": {"result": 7},
                "isError": False,
            },
        ),
    ],
)
def test_tool_result(value: Any, expected: dict[str, Any]) -> None:
    assert tool_result(value) == expected


def test_registry_defaults_and_duplicates() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def ping(ctx: ToolContext) -> str:
        """Answer pong."""
        return "pong"

    assert registry.names() == ["ping"]
    assert registry.describe() == [
        {
            "name": "ping",
            "description": "Answer pong.",
            "inputSchema": {"type": "object", "properties": {}},
        }
    ]
    with pytest.raises(ValueError, match="already registered"):
        registry.tool(name="ping")(ping)
    gym = LocalGym(tools=registry)
    assert len(gym.tools) == 1


def test_serve_rejects_unknown_domain() -> None:
    with pytest.raises(ValueError, match="unknown local gym domain"):
        serve(domain="nope")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_serve_runs_until_interrupted(http: aiohttp.ClientSession) -> None:
    port = free_port()
    code = f"from eog_core.local import serve; serve('127.0.0.1', {port}, response_mode='sse')"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert f"demo-csm-server serving on http://127.0.0.1:{port}" in line.decode()
        async with http.get(f"http://127.0.0.1:{port}/health") as response:
            assert (await response.json())["name"] == "demo-csm-server"
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), timeout=30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
