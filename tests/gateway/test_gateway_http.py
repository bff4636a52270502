"""The gateway's own HTTP/1.1 server, spoken to byte by byte over real loopback sockets.

Keep-alive, pipelining, chunked bodies, ``100 Continue``, HEAD; and what a lenient
parser would let through (request smuggling's ingredients, folded or bare-LF
headers, oversized heads and bodies) refused with a status and one line, the
connection closed where its framing can no longer be trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from eog_core._http1 import Limits
from eog_core.gateway import Gateway
from eog_core.gateway._http import Answer, HttpServer, Request, json_answer
from eog_core.local import LocalGym
from tests.gateway.conftest import make_gateway

Reply = tuple[int, dict[str, str], bytes]


class Wire:
    """One raw TCP connection to a server: write bytes, read whole responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Wire:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def reply(self) -> Reply:
        async with asyncio.timeout(10):
            head = await self.reader.readuntil(b"\r\n\r\n")
            status_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
            headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
            status = int(status_line.split(" ")[1])
            if status == 100:
                return status, headers, b""
            body = await self.reader.readexactly(int(headers.get("content-length", "0")))
            return status, headers, body

    async def closed(self) -> bool:
        """True when the server closed the connection (EOF within a few seconds)."""
        async with asyncio.timeout(5):
            try:
                return await self.reader.read(1) == b""
            except ConnectionResetError:  # closed while we still wrote: the kernel resets
                return True

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionResetError):  # the server closed on unread bytes
            await self.writer.wait_closed()


@pytest.fixture
async def wire(gateway: Gateway) -> AsyncIterator[Wire]:
    connection = await Wire.open(gateway.url)
    yield connection
    await connection.aclose()


def request(
    method: str,
    path: str,
    body: bytes = b"",
    *headers: str,
    version: str = "HTTP/1.1",
    length: bool = True,
) -> bytes:
    lines = [f"{method} {path} {version}", "Host: 127.0.0.1", *headers]
    if length and (body or method == "POST"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def error(reply: Reply) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(reply[2])["error"]
    return found


async def test_keep_alive_and_pipelined_requests_answer_in_order(
    gateway: Gateway, wire: Wire
) -> None:
    wire.send(
        request("POST", "/rollouts", b"{}")
        + request("GET", "/rollouts")
        + request("GET", "/nowhere")
    )
    created, listed, missing = await wire.reply(), await wire.reply(), await wire.reply()
    assert created[0] == 201 and json.loads(created[2])["task_id"]
    assert listed[0] == 200 and len(json.loads(listed[2])["rollouts"]) == 1
    assert missing[0] == 404 and error(missing)["code"] == "not_found"
    assert created[1]["content-type"] == "application/json; charset=utf-8"
    assert "connection" not in listed[1] and "date" in listed[1]
    wire.send(request("GET", "/rollouts", b"", "Connection: close"))
    status, headers, _ = await wire.reply()
    assert (status, headers["connection"]) == (200, "close")
    assert await wire.closed()


async def test_http_1_0_closes_after_its_answer_and_head_has_no_body(gateway: Gateway) -> None:
    wire = await Wire.open(gateway.url)
    wire.send(request("HEAD", "/rollouts", version="HTTP/1.0"))
    async with asyncio.timeout(10):
        raw = await wire.reader.read()  # everything until the server closes
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in head
    assert int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]) > 0 and rest == b""
    await wire.aclose()


async def test_a_client_that_closes_its_side_after_the_request_gets_the_answer(
    gateway: Gateway, wire: Wire
) -> None:
    wire.send(request("POST", "/rollouts", b"{}"))
    wire.writer.write_eof()  # as `nc -N` does
    status, headers, body = await wire.reply()
    assert status == 201 and json.loads(body)["rollout_id"]
    assert headers["connection"] == "close" and await wire.closed()


async def test_a_chunked_body_sent_a_byte_at_a_time(gateway: Gateway, wire: Wire) -> None:
    body = b'{"task_id": null}'
    chunked = b"".join(b"1\r\n%s\r\n" % body[i : i + 1] for i in range(len(body))) + b"0\r\n\r\n"
    wire.send(request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False))
    for i in range(len(chunked)):
        wire.send(chunked[i : i + 1])
        await wire.writer.drain()
    assert (await wire.reply())[0] == 201


async def test_a_chunked_body_is_read(gateway: Gateway, wire: Wire) -> None:
    body = json.dumps({"repeat": 1}).encode()
    chunks = b"%x;ext=1\r\n%s\r\n" % (4, body[:4]) + b"%x\r\n%s\r\n" % (len(body) - 4, body[4:])
    wire.send(
        request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False) + chunks[:7]
    )
    await asyncio.sleep(0)  # the rest arrives in another segment
    wire.send(chunks[7:] + b"0\r\nX-Trailer: 1\r\n\r\n" + request("GET", "/rollouts"))
    created, listed = await wire.reply(), await wire.reply()
    assert created[0] == 201 and json.loads(created[2])["repeat"] == 1
    assert listed[0] == 200


@pytest.mark.parametrize(
    ("raw", "status", "words"),
    [
        (
            request("POST", "/rollouts", b"{}", "Transfer-Encoding: chunked"),
            400,
            "both Content-Length and Transfer-Encoding",
        ),
        (
            request("POST", "/rollouts", b"{}", "Content-Length: 3", length=True),
            400,
            "two different content-length",
        ),
        (
            request("POST", "/rollouts", b"{}", "Content-Length: 2, 2", length=False),
            400,
            "malformed Content-Length",
        ),
        (
            request("POST", "/rollouts", b"{}", "Content-Length: -2", length=False),
            400,
            "malformed Content-Length",
        ),
        (
            request("POST", "/rollouts", b"", "Transfer-Encoding: gzip", length=False),
            501,
            "transfer coding not supported",
        ),
        (request("GET", "/rollouts", b"", "X-A: 1\nX-B: 2"), 400, "bare CR, LF or NUL"),
        (request("GET", "/rollouts", b"", "X-A: 1\rX-B: 2"), 400, "bare CR, LF or NUL"),
        (request("GET", "/rollouts", b"", "X-A: a\0b"), 400, "bare CR, LF or NUL"),
        (request("GET", "/rollouts", b"", "X-A: 1", " folded"), 400, "malformed header line"),
        (request("GET", "/rollouts", b"", "X-A : 1"), 400, "malformed header line"),
        (request("GET", "/rollouts", b"", "NoColon"), 400, "no colon"),
        (b"GET /rollouts HTTP/1.1 extra\r\n\r\n", 400, "malformed request line"),
        (b"get /rollouts HTTP/1.1\r\n\r\n", 400, "malformed request line"),
        (b"GET rollouts HTTP/1.1\r\n\r\n", 400, "not a path"),
        (b"GET /rollouts HTTP/2.0\r\n\r\n", 505, "HTTP version not supported"),
        (request("GET", "/rollouts", b"", "X-Big: " + "x" * 70_000), 431, "head is too large"),
        (
            request("GET", "/rollouts", b"", *(f"X-{n}: 1" for n in range(101))),
            431,
            "more than 100 request headers",
        ),
        (
            request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False)
            + b"zz\r\n{}\r\n0\r\n\r\n",
            400,
            "malformed chunk size",
        ),
        (
            request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False)
            + b"0x2\r\n{}\r\n0\r\n\r\n",
            400,
            "malformed chunk size",
        ),  # int(..., 16) would take it
        (
            request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False)
            + b"2\r\n{}XX0\r\n\r\n",
            400,
            "a chunk without its CRLF",
        ),
    ],
)
async def test_malformed_framing_is_refused_and_the_connection_closed(
    gateway: Gateway, wire: Wire, raw: bytes, status: int, words: str
) -> None:
    wire.send(raw + request("GET", "/rollouts"))  # a request behind it is never read
    reply = await wire.reply()
    assert reply[0] == status and words in error(reply)["message"], reply
    assert reply[1]["connection"] == "close"
    assert await wire.closed()
    assert gateway.rollouts() == []


async def test_an_oversized_body_is_refused_unread_and_the_connection_kept(
    gym: LocalGym, tmp_path: Path
) -> None:
    async with make_gateway(gym, tmp_path / "out", max_request_bytes=1024) as gateway:
        wire = await Wire.open(gateway.url)
        wire.send(request("POST", "/rollouts", b"x" * 5000)[:300])
        refused = await wire.reply()  # answered before the body arrives
        assert refused[0] == 413 and error(refused)["code"] == "too_large"
        wire.send(request("POST", "/rollouts", b"x" * 5000)[300:] + request("GET", "/rollouts"))
        assert (await wire.reply())[0] == 200  # the skipped body was not read as a request
        chunked = b"400\r\n" + b"x" * 1024 + b"\r\n" + b"10\r\n" + b"y" * 16 + b"\r\n0\r\n\r\n"
        wire.send(
            request("POST", "/rollouts", b"", "Transfer-Encoding: chunked", length=False) + chunked
        )
        refused = await wire.reply()
        assert refused[0] == 413 and await wire.closed()
        await wire.aclose()


async def test_expect_100_continue_and_a_refusal_before_the_body(
    gym: LocalGym, tmp_path: Path
) -> None:
    async with make_gateway(gym, tmp_path / "out", token="s3cret") as gateway:
        wire = await Wire.open(gateway.url)
        body = b"{}"
        wire.send(
            request(
                "POST",
                "/rollouts",
                b"",
                "Expect: 100-continue",
                "Authorization: Bearer s3cret",
                f"Content-Length: {len(body)}",
                length=False,
            )
        )
        assert (await wire.reply())[0] == 100
        wire.send(body)
        assert (await wire.reply())[0] == 201
        # a wrong token: refused without 100 Continue; the body never comes, so the
        # connection closes (its framing is unknown)
        wire.send(
            request(
                "POST",
                "/rollouts",
                b"",
                "Expect: 100-continue",
                "Authorization: Bearer wrong",
                "Content-Length: 2",
                length=False,
            )
        )
        refused = await wire.reply()
        assert refused[0] == 401 and refused[1]["www-authenticate"] == "Bearer"
        assert await wire.closed()
        await wire.aclose()
        # without Expect, a refused body is skipped and the connection stays usable
        wire = await Wire.open(gateway.url)
        wire.send(
            request("POST", "/rollouts", b'{"x": 1}')
            + request("GET", "/rollouts", b"", "Authorization: Bearer s3cret")
        )
        assert (await wire.reply())[0] == 401
        assert (await wire.reply())[0] == 200
        await wire.aclose()
        assert len(gateway.rollouts()) == 1


async def test_an_absolute_target_and_percent_escapes_route_as_their_path(
    gateway: Gateway, wire: Wire
) -> None:
    wire.send(request("GET", "http://127.0.0.1/rollouts?x=1") + request("GET", "/%72ollouts"))
    assert [(await wire.reply())[0] for _ in range(2)] == [200, 200]


# -- the server alone, with handlers of the test's own -----------------------------------------


async def _serve(handler: Any, **options: Any) -> HttpServer:
    server = HttpServer(
        handler,
        admit=lambda request: None,
        error=lambda status, message: json_answer({"error": message}, status),
        limits=Limits(max_request_body=1 << 16, **options),
    )
    await server.start("127.0.0.1", 0)
    return server


def _url(server: HttpServer) -> str:
    assert server.bound is not None
    return f"http://127.0.0.1:{server.bound[1]}"


async def test_idle_and_stalled_connections_are_closed() -> None:
    async def hello(request: Request) -> Answer:
        return Answer(200, b"hi")

    server = await _serve(hello, idle_timeout=0.3, head_deadline=0.3)
    try:
        idle, stalled = await Wire.open(_url(server)), await Wire.open(_url(server))
        idle.send(request("GET", "/"))
        assert (await idle.reply())[2] == b"hi"
        stalled.send(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
        assert await idle.closed() and await stalled.closed()
        assert server.connections == set()
        await idle.aclose()
        await stalled.aclose()
    finally:
        await server.aclose(1.0)


async def test_a_client_gone_does_not_cancel_its_handler_and_close_waits_for_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entered, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def slow(request: Request) -> Answer:
        entered.set()
        await release.wait()
        finished.set()
        return Answer(200, b"late")

    server = await _serve(slow)
    wire = await Wire.open(_url(server))
    wire.send(request("POST", "/", b"{}"))
    async with asyncio.timeout(5):
        await entered.wait()
    sock = wire.writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    wire.writer.transport.abort()  # the client goes away mid-request (a reset, not a FIN)
    async with asyncio.timeout(5):
        while server.connections:  # the server sees the EOF  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    closing = asyncio.create_task(server.aclose(10.0))
    done, _ = await asyncio.wait({closing}, timeout=0.2)
    assert not done  # waiting for the handler in flight
    release.set()
    with caplog.at_level(logging.ERROR, logger="eog_core.gateway"):
        async with asyncio.timeout(5):
            await closing
    assert finished.is_set() and caplog.records == []


async def test_close_cancels_handlers_past_the_shutdown_timeout() -> None:
    entered, cancelled = asyncio.Event(), asyncio.Event()

    async def forever(request: Request) -> Answer:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    server = await _serve(forever)
    wire = await Wire.open(_url(server))
    wire.send(request("GET", "/"))
    async with asyncio.timeout(5):
        await entered.wait()
        await server.aclose(0.1)
    assert cancelled.is_set() and await wire.closed()
    await wire.aclose()


async def test_a_handler_that_raises_answers_500_and_the_connection_lives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(request: Request) -> Answer:
        if request.path == "/boom":
            raise RuntimeError("a bug")
        return Answer(204)

    server = await _serve(broken)
    try:
        wire = await Wire.open(_url(server))
        with caplog.at_level(logging.ERROR, logger="eog_core.gateway"):
            wire.send(request("GET", "/boom") + request("GET", "/fine"))
            assert [(await wire.reply())[0] for _ in range(2)] == [500, 204]
        assert "content-length" not in (await _one(wire, request("GET", "/fine")))[1]
        assert any("GET /boom failed" in r.getMessage() for r in caplog.records)
        await wire.aclose()
    finally:
        await server.aclose(1.0)


async def _one(wire: Wire, raw: bytes) -> Reply:
    wire.send(raw)
    return await wire.reply()


async def test_many_pipelined_refusals_do_not_recurse() -> None:
    async def hello(request: Request) -> Answer:
        return Answer(200, b"hi")

    server = HttpServer(
        hello,
        admit=lambda request: Answer(401, b"no"),
        error=lambda status, message: Answer(status, message.encode()),
        limits=Limits(max_request_body=1024),
    )
    await server.start("127.0.0.1", 0)
    try:
        wire = await Wire.open(_url(server))
        wire.send(request("GET", "/") * 5000)  # 5,000 refusals answered in one loop
        statuses = [(await wire.reply())[0] for _ in range(5000)]
        assert set(statuses) == {401}
        await wire.aclose()
    finally:
        await server.aclose(1.0)


async def test_a_failure_of_the_gateways_own_is_one_500_internal_error(
    gym: LocalGym, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(record: Any) -> None:
        raise RuntimeError("a bug in the record hook")

    async with make_gateway(gym, tmp_path / "out", on_record=broken) as gateway:
        wire = await Wire.open(gateway.url)
        created = await _one(wire, request("POST", "/rollouts", b"{}"))
        rollout_id = json.loads(created[2])["rollout_id"]
        with caplog.at_level(logging.ERROR, logger="eog_core.gateway"):
            failed = await _one(
                wire, request("POST", f"/rollouts/{rollout_id}/finish", b'{"final_answer": "x"}')
            )
        assert failed[0] == 500 and error(failed) == {
            "code": "internal_error",
            "message": "the gateway failed on this request; its log says why",
        }
        assert "a bug in the record hook" not in failed[2].decode()
        assert any("/finish failed" in r.getMessage() for r in caplog.records)
        assert (await _one(wire, request("GET", "/rollouts")))[0] == 200  # the connection lives
        await wire.aclose()
    assert gym.database_ids() == []
