"""Property tests of JSON-RPC bodies on both sides of the wire.

Client: whatever a gym answers (any status, content type, JSON shape, SSE
framing or plain bytes), ``GymClient`` returns a result or raises an
``EogError``; nothing else escapes and nothing hangs. Server: whatever a
client posts, ``LocalGym`` answers a JSON-RPC result or typed error, never 5xx.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from eog_core.errors import EogError
from eog_core.gym import GymClient, Timeouts
from eog_core.local import LocalGym

pytestmark = pytest.mark.property

ID = "__THE_REQUEST_ID__"  # replaced by the id of the request being answered

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
tool_results = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "image"]), "text": json_values}
                ),
                max_size=3,
            ),
        ),
        "isError": json_values,
        "structuredContent": json_values,
        "tools": st.one_of(json_values, st.lists(json_values, max_size=3)),
        "nextCursor": json_values,
    },
)
errors = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {}, optional={"code": json_values, "message": json_values, "data": json_values}
    ),
)
messages = (
    st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values,
            "id": st.just(ID) | json_values,
            "result": tool_results | json_values,
            "error": errors,
            "method": st.sampled_from(["ping", "notifications/message", "roots/list"])
            | st.text(max_size=8),
        },
    )
    | json_values
)


@st.composite
def sse_bodies(draw: st.DrawFn) -> bytes:
    parts = []
    for message in draw(st.lists(messages, max_size=4)):
        data = json.dumps(message) if draw(st.booleans()) else draw(st.text(max_size=20))
        event = draw(st.sampled_from(["", "event: message\n", "event: other\n"]))
        lines = "".join(f"data: {line}\n" for line in data.split("\n"))
        parts.append(f"{event}{lines}\n")
    return "".join(parts).encode()


answers = st.tuples(
    st.sampled_from([200, 200, 200, 202, 204, 400, 404, 500, 503]),
    st.one_of(
        st.tuples(st.just("application/json"), messages.map(lambda m: json.dumps(m).encode())),
        st.tuples(
            st.just("application/json"),
            st.lists(messages, max_size=3).map(lambda m: json.dumps(m).encode()),
        ),
        st.tuples(st.just("text/event-stream"), sse_bodies()),
        st.tuples(
            st.sampled_from(
                ["application/json", "text/plain", "text/event-stream", "application/octet-stream"]
            ),
            st.binary(max_size=64),
        ),
    ),
)


class ScriptedGym:
    """An MCP endpoint on its own thread whose answer to one method each example sets."""

    def __init__(self) -> None:
        self.target = "tools/call"
        self.answer: tuple[int, tuple[str, bytes]] = (200, ("application/json", b"{}"))
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.url = ""
        self.local_url = ""

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start())
        self.ready.set()
        self.loop.run_forever()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/mcp", self._post)
        app.router.add_delete("/mcp", self._delete)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        self.local = LocalGym(name="fuzzed")
        await self.local.start()
        self.local_url = self.local.mcp_url

    async def _stop(self) -> None:
        await self.runner.cleanup()
        await self.local.stop()

    async def _post(self, request: web.Request) -> web.Response:
        message = await request.json()
        method = message.get("method")
        if method == self.target:
            status, (content_type, body) = self.answer
            body = body.replace(json.dumps(ID).encode(), json.dumps(message["id"]).encode())
            return web.Response(
                status=status,
                body=body,
                content_type=content_type,
                headers={"mcp-session-id": "s1"},
            )
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "scripted"},
            }
            return web.json_response(
                {"jsonrpc": "2.0", "id": message["id"], "result": result},
                headers={"mcp-session-id": "s1"},
            )
        return web.Response(status=202)

    async def _delete(self, request: web.Request) -> web.Response:
        return web.Response()

    def __enter__(self) -> ScriptedGym:
        self.thread.start()
        self.ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedGym]:
    with ScriptedGym() as gym:
        yield gym


async def exchange(url: str, target: str) -> None:
    timeouts = Timeouts(connect=10, rpc=20, admin=10)
    async with GymClient(url, name="scripted", timeouts=timeouts) as client:
        try:
            if target in ("tools/list", "initialize"):  # a first list_tools initializes
                await client.list_tools()
            else:
                result = await client.call_tool("t", {}, database_id="db_1")
                assert isinstance(result.text, str)
        except EogError:
            pass


@settings(max_examples=max(100, settings.default.max_examples))
@given(target=st.sampled_from(["tools/call", "tools/list", "initialize"]), answer=answers)
def test_any_answer_is_a_result_or_an_eog_error(
    scripted: ScriptedGym, target: str, answer: tuple[int, tuple[str, bytes]]
) -> None:
    scripted.target, scripted.answer = target, answer
    asyncio.run(asyncio.wait_for(exchange(scripted.url, target), 60))


async def post_raw(url: str, body: bytes, session: bool) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if session:
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"},
            }
            async with http.post(url, json=init, headers=headers) as response:
                headers["mcp-session-id"] = response.headers["mcp-session-id"]
        async with http.post(url, data=body, headers=headers) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None


request_bodies = st.one_of(
    st.binary(max_size=64),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0")},
        optional={
            "id": json_values,
            "params": json_values | tool_results,
            "method": st.sampled_from(
                ["tools/call", "tools/list", "ping", "initialize", "notifications/initialized"]
            )
            | json_values,
        },
    ).map(lambda m: json.dumps(m).encode()),
)


@settings(max_examples=max(100, settings.default.max_examples))
@given(body=request_bodies, session=st.booleans())
def test_local_gym_answers_any_body_with_a_typed_answer(
    scripted: ScriptedGym, body: bytes, session: bool
) -> None:
    status, answer = asyncio.run(asyncio.wait_for(post_raw(scripted.local_url, body, session), 60))
    assert status in (200, 202, 400, 404), (status, answer)
    if status == 202:
        return
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        assert isinstance(answer["error"]["code"], int) and answer["error"]["message"]
