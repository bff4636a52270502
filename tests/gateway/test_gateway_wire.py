"""Hostile peers on the gateway's wire (issue 29), each over real loopback sockets: a client
that never reads its answers, chunk extensions, idle connections by the hundred, a head
dripped a byte at a time, a foreign ``Host`` or an unparsable ``Origin``, pipelining after a
half-close, a head that never ends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core._http1 import Limits
from eog_core.gateway import Gateway
from eog_core.gateway._http import Answer, HttpServer, Request, json_answer
from eog_core.local import LocalGym
from tests.gateway.conftest import make_gateway
from tests.gateway.test_gateway_hostile import call, initialize, open_rollout, rpc
from tests.gateway.test_gateway_http import Wire, error, request


async def _serve(handler: Any, **limits: Any) -> HttpServer:
    server = HttpServer(
        handler,
        admit=lambda request: None,
        error=lambda status, message: json_answer({"error": message}, status),
        limits=Limits(**limits),
    )
    await server.start("127.0.0.1", 0)
    return server


def _url(server: HttpServer) -> str:
    assert server.bound is not None
    return f"http://127.0.0.1:{server.bound[1]}"


async def _until(condition: Any, what: str) -> None:
    async with asyncio.timeout(10):
        while not condition():  # noqa: ASYNC110 (the server's state: no event to wait on)
            await asyncio.sleep(0.01)


async def test_a_client_that_does_not_read_its_answers_is_not_read_either() -> None:
    """96 MiB were held for a client that sent requests and never read an answer."""
    answer = b"a" * (64 * 1024)

    async def big(request: Request) -> Answer:
        return Answer(200, answer)

    server = await _serve(big, max_buffered=256 * 1024)
    try:
        wire = await Wire.open(_url(server))
        body = b"b" * (64 * 1024)
        count = 512  # 32 MiB of requests, 32 MiB of answers
        wire.send(request("POST", "/", body) * count)
        (connection,) = server.connections
        await _until(lambda: connection.reading_paused, "reading paused")
        held = connection.reader.ready_bytes
        written = connection.transport.get_write_buffer_size() if connection.transport else 0
        assert held <= 256 * 1024 + 2 * 256 * 1024 + len(body)  # the bound, one read, one request
        assert written <= 2 * 64 * 1024 + len(answer) + 1024
        replies = [await wire.reply() for _ in range(count)]  # once read, every answer comes
        assert {(status, got) for status, _, got in replies} == {(200, answer)}
        await wire.aclose()
    finally:
        await server.aclose(1.0)


async def test_chunk_extensions_count_against_the_body_limit(gym: LocalGym, tmp_path: Path) -> None:
    """160 MiB were held for 163 KiB of data sent as chunks with long extensions."""
    async with make_gateway(gym, tmp_path / "out", max_request_bytes=64 * 1024) as gateway:
        wire = await Wire.open(gateway.url)
        wire.send(request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False))
        chunk = b"1;" + b"e" * 1000 + b"\r\nx\r\n"  # a byte of data, a KiB of extension
        replied = asyncio.create_task(wire.reply())
        sent = 0
        while not replied.done() and sent < 64:  # at most 64 MiB, a MiB at a time
            wire.send(chunk * 1000)
            await wire.writer.drain()
            sent += 1
        status, _, body = await replied
        assert (status, sent < 64) == (413, True)  # long before the 64 MiB were sent
        assert "with its framing" in json.loads(body)["error"]["message"]
        assert await wire.closed()
        await wire.aclose()


async def test_idle_connections_over_the_cap_are_closed_and_rollouts_keep_working(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A process holding idle connections exhausted the gateway's descriptors; then
    ``POST /rollouts`` answered ``seed_failed`` and a running rollout failed."""
    async with make_gateway(gym, tmp_path / "out", repeats=2, max_connections=4) as gateway:
        rollout = await open_rollout(http, gateway)
        session = await initialize(http, rollout["mcp_url"])
        held = []
        for _ in range(12):  # a peer's idle keep-alive connections, three times the cap
            wire = await Wire.open(gateway.url)
            wire.send(request("GET", "/rollouts"))
            assert (await wire.reply())[0] == 200
            held.append(wire)
        for wire in held[:-4]:  # all but the newest were closed to make room
            assert await wire.closed()
        status, body = await rpc(
            http, rollout["mcp_url"], session, call("find_account", {"name": "Harbor Lane"})
        )
        assert status == 200 and "result" in body, body
        assert (await open_rollout(http, gateway))["rollout_id"]
        for wire in held:
            await wire.aclose()


async def test_over_the_cap_with_none_idle_the_newcomer_is_answered_503() -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(request: Request) -> Answer:
        entered.set()
        await release.wait()
        return Answer(200, b"done")

    server = await _serve(slow, max_connections=2)
    try:
        busy = [await Wire.open(_url(server)) for _ in range(2)]
        for wire in busy:
            entered.clear()
            wire.send(request("GET", "/"))
            async with asyncio.timeout(5):
                await entered.wait()
        late = await Wire.open(_url(server))
        status, headers, body = await late.reply()
        assert (status, headers["connection"]) == (503, "close")
        assert "over 2 connections" in json.loads(body)["error"]
        assert await late.closed()
        release.set()
        assert [(await wire.reply())[2] for wire in busy] == [b"done", b"done"]
        for wire in [*busy, late]:
            await wire.aclose()
    finally:
        await server.aclose(1.0)


async def test_a_head_dripped_a_byte_at_a_time_is_answered(gateway: Gateway) -> None:
    """The head was scanned again for each byte: a 64 KiB head dripped cost seconds."""
    wire = await Wire.open(gateway.url)
    raw = request("GET", "/rollouts", b"", "X-Padding: " + "p" * 30_000)
    for at in range(0, len(raw), 16):  # in 16-byte segments (one write each)
        wire.send(raw[at : at + 16])
        await wire.writer.drain()
    assert (await wire.reply())[0] == 200
    await wire.aclose()


@pytest.mark.parametrize("origin", ["http://[::1", "http://[zz]:1", "http://a:b:c]"])
async def test_an_unparsable_origin_is_answered_400_also_pipelined(
    gateway: Gateway, origin: str
) -> None:
    wire = await Wire.open(gateway.url)
    wire.send(request("GET", "/rollouts", b"", f"Origin: {origin}") + request("GET", "/rollouts"))
    refused, listed = await wire.reply(), await wire.reply()
    assert (refused[0], error(refused)["code"]) == (400, "bad_request")
    assert listed[0] == 200
    await wire.aclose()


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("evil.example:{port}", 403),  # a page whose name was rebound to 127.0.0.1
        ("evil.example", 403),
        ("127.0.0.1.evil.example", 403),
        ("localhost:{port}", 200),
        ("127.0.0.1:{port}", 200),
        ("[::1]:{port}", 200),
    ],
)
async def test_a_foreign_host_cannot_read_the_rollouts(
    gateway: Gateway, host: str, status: int
) -> None:
    port = gateway.url.rsplit(":", 1)[1]
    wire = await Wire.open(gateway.url)
    head = f"GET /rollouts HTTP/1.1\r\nHost: {host.format(port=port)}\r\n\r\n".encode()
    wire.send(head)
    reply = await wire.reply()
    assert reply[0] == status
    if status == 403:
        assert error(reply)["code"] == "forbidden_host" and b"rollout" not in reply[2]
    await wire.aclose()


async def test_allow_remote_takes_any_host(gym: LocalGym, tmp_path: Path) -> None:
    async with make_gateway(gym, tmp_path / "out", allow_remote=True, token="s3cret") as gateway:
        wire = await Wire.open(gateway.url)
        wire.send(
            b"GET /rollouts HTTP/1.1\r\nHost: gateway.example\r\n"
            b"Authorization: Bearer s3cret\r\n\r\n"
        )
        assert (await wire.reply())[0] == 200
        await wire.aclose()


async def test_pipelined_requests_after_a_half_close_are_all_answered(
    gateway: Gateway,
) -> None:
    wire = await Wire.open(gateway.url)
    wire.send(request("POST", "/rollouts", b"{}") + request("GET", "/rollouts") * 2)
    wire.writer.write_eof()
    replies = [await wire.reply() for _ in range(3)]
    assert [status for status, _, _ in replies] == [201, 200, 200]
    assert "connection" not in replies[1][1] and replies[2][1]["connection"] == "close"
    assert await wire.closed()
    await wire.aclose()


async def test_a_head_that_keeps_dripping_still_has_a_deadline() -> None:
    """The old timeout counted from the last byte: a byte every few seconds held a
    connection for ever."""

    async def hello(request: Request) -> Answer:
        return Answer(200, b"hi")

    server = await _serve(hello, head_deadline=0.5, idle_timeout=60.0)
    try:
        for first, drip in [(b"GET / HTTP/1.1\r\nHost: x\r\n", b"X-A: 1\r\n"), (b"G", b"E")]:
            wire = await Wire.open(_url(server))
            wire.send(first)
            closed = asyncio.create_task(wire.closed())
            for _ in range(100):  # up to 5 s of a piece each 50 ms; the deadline is 0.5 s
                if closed.done():
                    break
                wire.send(drip)  # whole header lines, or a request line that never ends
                await asyncio.sleep(0.05)
            assert await closed
            await wire.aclose()
        assert not server.connections
    finally:
        await server.aclose(1.0)


async def test_a_request_pipelined_behind_a_chunked_body_does_not_freeze_the_gateway(
    gateway: Gateway,
) -> None:
    """Found by review: a chunked request, then a request whose head and first body bytes came
    in the same read, then the rest of its body: the reader looped for ever and the gateway
    answered no one again."""
    wire = await Wire.open(gateway.url)
    wire.send(
        request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False)
        + b"2\r\n{}\r\n0\r\n\r\n"
        + request("GET", "/rollouts", b"", "Content-Length: 100", length=False)
        + b"y" * 10
    )
    await asyncio.sleep(0.05)
    wire.send(b"y" * 90)
    assert [(await wire.reply())[0] for _ in range(2)] == [201, 200]
    other = await Wire.open(gateway.url)
    other.send(request("GET", "/rollouts"))
    assert (await other.reply())[0] == 200
    await other.aclose()
    await wire.aclose()


async def test_an_upgrade_is_answered_and_the_connection_closed(gateway: Gateway) -> None:
    """llhttp stops at an upgrade: nothing after it is read, so the connection must end."""
    wire = await Wire.open(gateway.url)
    wire.send(
        request("GET", "/rollouts", b"", "Upgrade: websocket", "Connection: upgrade")
        + request("GET", "/rollouts")
    )
    status, headers, _ = await wire.reply()
    assert (status, headers["connection"]) == (200, "close")
    assert await wire.closed()
    await wire.aclose()


def test_the_gateway_serves_on_uvloop(tmp_path: Path) -> None:
    """uvloop's transports are not ``asyncio.Transport`` instances: a gateway embedded in a
    uvloop application (an RL worker's) takes them as they are."""
    uvloop = pytest.importorskip("uvloop")

    async def one_rollout(out: Path) -> list[int]:
        async with LocalGym.demo() as gym, make_gateway(gym, out) as gateway:
            wire = await Wire.open(gateway.url)
            wire.send(request("POST", "/rollouts", b"{}") + request("GET", "/rollouts"))
            statuses = [(await wire.reply())[0] for _ in range(2)]
            await wire.aclose()
            return statuses

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(one_rollout(tmp_path / "out")) == [201, 200]
