"""LeanTransport, the gateway's gym transport, on the wire.

A scripted asyncio server answers each request with exactly the bytes a test
gives (split where the test splits them), so framing, keep-alive, retries and
timeouts are checked byte for byte; the official SDK's FastMCP and LocalGym then
run whole MCP exchanges through it (the fault suites of ``test_client_faults`` and
``test_client_rest`` run with both transports too).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest

from eog_core import load_task
from eog_core.errors import (
    ClosedError,
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    RequestError,
)
from eog_core.gym import (
    GymClient,
    GymDirectory,
    HttpRequest,
    LeanTransport,
    RetryPolicy,
    TaskSession,
    Timeouts,
    _mcp_stream,
    connection_pool,
)
from eog_core.local import DEMO_SERVER_NAME, LocalGym, demo_paths

from .conftest import UvicornThread, eventually, free_port

FAST = RetryPolicy(attempts=3, initial_delay=0.0, max_delay=0.0)


class FixedBackoff(RetryPolicy):
    """Half a second before every retry (the default's jitter could make it nought)."""

    def delay(self, attempt: int) -> float:
        return 0.5


HANG = "hang"  # a script step: never answer further
CLOSE = "close"  # a script step: close the connection


@attrs.define
class Scripted:
    """Answers the n-th request with the n-th script (a list of byte pieces and steps)."""

    scripts: list[list[bytes | str]] = attrs.Factory(list)
    requests: list[bytes] = attrs.Factory(list)
    connections: int = 0
    live: int = 0
    port: int = 0

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.live += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                self.requests.append(head + await reader.readexactly(length))
                script = self.scripts.pop(0) if self.scripts else [json_answer({"ok": True})]
                for piece in script:
                    if piece == HANG:
                        await asyncio.sleep(3600)
                    if piece == CLOSE:
                        return
                    assert isinstance(piece, bytes)
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.002)  # a separate read on the client's side
        finally:
            self.live -= 1
            writer.close()


def json_answer(value: Any, *, status: str = "200 OK", extra: str = "") -> bytes:
    body = json.dumps(value).encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.fixture
async def server() -> AsyncIterator[Scripted]:
    scripted = Scripted()
    listener = await asyncio.start_server(scripted.handle, "127.0.0.1", 0)
    scripted.port = listener.sockets[0].getsockname()[1]
    async with listener:
        yield scripted
        listener.close()


@pytest.fixture
async def lean() -> AsyncIterator[LeanTransport]:
    transport = LeanTransport(retry=FAST)
    yield transport
    await transport.aclose()


def post(url: str, *, idempotent: bool = False, timeout: float = 5.0, **extra: Any) -> HttpRequest:
    return HttpRequest(
        method="POST",
        url=url,
        json={"jsonrpc": "2.0", "id": 1, "method": "x"},
        headers={"Accept": "application/json", "X-Database-Id": "db_1"},
        idempotent=idempotent,
        timeout=timeout,
        gym="scripted",
        **extra,
    )


# -- answers read right -------------------------------------------------------------------------


async def test_json_answers_on_one_kept_alive_connection(
    server: Scripted, lean: LeanTransport
) -> None:
    server.scripts = [
        [json_answer({"n": 1}, extra="X-Thing: a\r\nx-thing: b\r\n")],
        [json_answer({"n": 2})],
    ]
    first = await lean.send(post(server.url()))
    second = await lean.send(post(server.url()))
    assert (first.status, first.body, second.body) == (200, {"n": 1}, {"n": 2})
    assert first.headers.get("CONTENT-TYPE") == first.headers["content-type"] == "application/json"
    assert first.headers["X-Thing"] == "a, b" and "x-THING" in first.headers
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /mcp HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}".encode() in lines
    assert b"Content-Type: application/json" in lines and b"X-Database-Id: db_1" in lines
    assert f"Content-Length: {len(body)}".encode() in lines
    assert any(line.startswith(b"User-Agent: eog-core/") for line in lines)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 1, "method": "x"}


async def test_a_chunked_answer_split_anywhere(server: Scripted, lean: LeanTransport) -> None:
    body = json.dumps({"text": "x" * 300}).encode()
    wire = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{100:x};ext=1\r\n".encode()
        + body[:100]
        + b"\r\n"
        + f"{len(body) - 100:X}\r\n".encode()
        + body[100:]
        + b"\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    server.scripts = [[wire[i : i + 7] for i in range(0, len(wire), 7)], [json_answer({"n": 2})]]
    assert (await lean.send(post(server.url()))).body == {"text": "x" * 300}
    assert (await lean.send(post(server.url()))).body == {"n": 2}
    assert server.connections == 1


@pytest.mark.parametrize(
    "answer",
    [
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"n": 1}',
        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"n": 1}',
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b'Content-Length: 8\r\n\r\n{"n": 1}',
    ],
    ids=["until-close", "http-1.0", "connection-close"],
)
async def test_an_answer_ending_its_connection_is_not_reused(
    server: Scripted, lean: LeanTransport, answer: bytes
) -> None:
    server.scripts = [[answer, CLOSE]]
    assert (await lean.send(post(server.url()))).body == {"n": 1}
    assert (await lean.send(post(server.url()))).body == {"ok": True}
    assert server.connections == 2


async def test_interim_answers_are_skipped(server: Scripted, lean: LeanTransport) -> None:
    server.scripts = [
        [
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n",
            json_answer({"n": 1}),
        ]
    ]
    assert (await lean.send(post(server.url()))).body == {"n": 1}


async def test_head_and_no_content_answers_have_no_body(
    server: Scripted, lean: LeanTransport
) -> None:
    server.scripts = [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"],
        [b"HTTP/1.1 204 No Content\r\n\r\n"],
    ]
    head = await lean.send(HttpRequest(method="HEAD", url=server.url("/health")))
    empty = await lean.send(post(server.url()))
    assert (head.status, head.body, empty.status, empty.body) == (200, None, 204, None)
    assert server.connections == 1
    assert server.requests[0].startswith(b"HEAD /health HTTP/1.1\r\n")


async def test_a_large_answer_and_a_raw_body(server: Scripted, lean: LeanTransport) -> None:
    big = {"text": "y" * 5_000_000}
    server.scripts = [[json_answer(big)], [b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"]]
    assert (await lean.send(post(server.url()))).body == big
    raw = await lean.send(post(server.url(), raw_body=True))
    assert (raw.raw, raw.body) == (b"abc", None)


async def test_an_event_stream_is_read_as_it_arrives_and_may_stop_early(
    server: Scripted, lean: LeanTransport
) -> None:
    def event(value: Any) -> bytes:
        data = f"event: message\ndata: {json.dumps(value)}\n\n".encode()
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    server.scripts = [
        [
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            event({"jsonrpc": "2.0", "method": "notifications/message"}),
            event({"jsonrpc": "2.0", "id": 1, "result": {}}),
            HANG,
        ]
    ]
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    response = await lean.send(
        post(server.url(), sse_until=lambda m: "id" in m, on_message=on_message)
    )
    assert response.is_event_stream and response.messages == tuple(seen)
    assert [m.get("id") for m in seen] == [None, 1]
    assert (await lean.send(post(server.url()))).body == {"ok": True}
    assert server.connections == 2  # the stream was left unread: its connection closed


async def test_an_error_status_is_typed_and_transient_ones_retried(
    server: Scripted, lean: LeanTransport
) -> None:
    server.scripts = [[json_answer({"detail": "Session not found"}, status="404 Not Found")]]
    with pytest.raises(GymHTTPError) as caught:
        await lean.send(post(server.url()))
    assert (caught.value.status, caught.value.detail, caught.value.gym) == (
        404,
        "Session not found",
        "scripted",
    )
    busy = json_answer({"detail": "busy"}, status="503 Service Unavailable")
    server.scripts = [[busy], [busy], [json_answer({"n": 3})]]
    assert (await lean.send(post(server.url(), idempotent=True))).body == {"n": 3}
    server.scripts = [[busy], [json_answer({"n": 4})]]
    with pytest.raises(GymHTTPError):
        await lean.send(post(server.url(), idempotent=False))  # a tool call is never sent twice
    assert len(server.requests) == 1 + 3 + 1


# -- strict framing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (b"HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"),
        (b"HTTP/1.1 20x OK\r\nContent-Length: 2\r\n\r\n{}", "status line"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            "both Content-Length and Transfer-Encoding",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two different"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "transfer coding"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n",
            "chunk size",
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n", "CRLF"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n folded\r\n\r\n{}", "header line"),
        (b"HTTP/1.1 200 OK\r\nNo-Colon-Here\r\nContent-Length: 2\r\n\r\n{}", "header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}", "compressed"),
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", "larger than 64 KiB"),
        (b"HTTP/1.1 2\xb20 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n{}", "Content-Length"),
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", "Switching Protocols"),
        # chunk framings h11 refuses, which the hand-written parser took (issue 29)
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x\n{}\r\n0\r\n\r\n", "HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\n{}\r\n0\r\n\r\n", "HTTP"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nno field\r\n\r\n",
            "HTTP",
        ),
    ],
    ids=[
        "version",
        "code",
        "cl-and-te",
        "two-lengths",
        "signed-length",
        "coding",
        "0x-size",
        "no-crlf",
        "folded",
        "no-colon",
        "gzip",
        "huge-head",
        "superscript-code",
        "superscript-length",
        "upgrade",
        "lf-in-extension",
        "space-before-size",
        "trailer-not-a-field",
    ],
)
async def test_malformed_answers_are_protocol_errors_and_not_resent(
    server: Scripted, lean: LeanTransport, answer: bytes, why: str
) -> None:
    server.scripts = [[answer, HANG]] * 3
    with pytest.raises(GymProtocolError, match="malformed HTTP answer") as caught:
        await lean.send(post(server.url(), idempotent=True))
    assert why in str(caught.value)
    assert len(server.requests) == 1  # not transient: the same gym would answer the same


async def test_a_connection_lost_mid_answer_is_retried_only_when_idempotent(
    server: Scripted, lean: LeanTransport
) -> None:
    cut: list[bytes | str] = [b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial":', CLOSE]
    server.scripts = [cut, cut, cut]
    with pytest.raises(GymProtocolError, match="connection lost before the answer"):
        await lean.send(post(server.url(), idempotent=True))
    assert len(server.requests) == 3
    server.scripts = [cut]
    with pytest.raises(GymProtocolError, match="connection lost"):
        await lean.send(post(server.url(), idempotent=False))
    assert len(server.requests) == 4


async def test_a_stalled_answer_times_out(server: Scripted, lean: LeanTransport) -> None:
    server.scripts = [[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{", HANG]]
    started = time.monotonic()
    with pytest.raises(GymTimeoutError, match=r"no answer within 0.3s"):
        await lean.send(post(server.url(), timeout=0.3))
    assert 0.25 < time.monotonic() - started < 3
    assert (await lean.send(post(server.url()))).body == {"ok": True}  # on a new connection
    assert server.connections == 2


async def test_a_deadline_bounds_the_retries(server: Scripted) -> None:
    """A retry that would start after the deadline is not made: the request ends at once."""
    slow = LeanTransport(retry=FixedBackoff(attempts=50))
    server.scripts = [[json_answer({"detail": "busy"}, status="503 Service Unavailable")]] * 50
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    with pytest.raises(
        GymTimeoutError, match=r"no answer within 0.4s \(1 attempt\(s\), the last: HTTP 503"
    ):
        await slow.send(
            post(server.url(), idempotent=True, timeout=0.4, deadline=loop.time() + 0.4)
        )
    assert time.monotonic() - started < 0.4  # it did not wait out a backoff it had no time for
    assert len(server.requests) == 1
    await slow.aclose()


# -- connections -------------------------------------------------------------------------------


async def test_a_dead_port_is_unreachable_and_a_bad_url_refused(lean: LeanTransport) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(GymUnreachableError, match="cannot connect") as caught:
        await lean.send(post(url))
    assert (caught.value.gym, caught.value.url) == ("scripted", url)
    for bad in (
        "ftp://127.0.0.1/x",
        "http:///nohost",
        "http://127.0.0.1:1/a b",
        f"http://{'a' * 64}.example/x",
    ):
        with pytest.raises(GymUnreachableError, match="invalid URL"):
            await lean.send(post(bad))


async def test_url_credentials_are_sent_as_basic_auth_as_aiohttp_does(
    server: Scripted, lean: LeanTransport
) -> None:
    url = server.url().replace("http://", "http://us%40er:p%3Aw@")
    assert (await lean.send(post(url))).body == {"ok": True}
    assert b"\r\nAuthorization: Basic dXNAZXI6cDp3\r\n" in server.requests[0]  # us@er:p:w
    both = HttpRequest(method="GET", url=url, headers={"Authorization": "Bearer t"})
    with pytest.raises(RequestError, match="both credentials in the URL"):
        await lean.send(both)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"X-Email": "a@b.io\r\nX-Evil: 1"}, "header injection"),
        ({"X-Email": "a@b.io\nX-Evil: 1"}, "header injection"),
        ({"X-Bad Name": "1"}, "not an HTTP token"),
        ({"Content-Length": "5"}, "set by the transport"),
        ({"Host": "elsewhere"}, "set by the transport"),
        ({"X-Method": "ok"}, "upper-case token"),  # with the method below
    ],
)
async def test_headers_that_would_break_framing_are_refused_before_connecting(
    server: Scripted, lean: LeanTransport, headers: dict[str, str], why: str
) -> None:
    method = "head" if "Method" in next(iter(headers)) else "POST"
    with pytest.raises(RequestError, match=why):
        await lean.send(HttpRequest(method=method, url=server.url(), headers=headers, json={}))
    await asyncio.sleep(0.01)
    assert (server.connections, server.requests) == (0, [])


async def test_a_connection_the_gym_closed_while_idle_is_not_used(
    server: Scripted, lean: LeanTransport
) -> None:
    server.scripts = [[json_answer({"n": 1}), CLOSE]]  # keep-alive said, then closed anyway
    assert (await lean.send(post(server.url()))).body == {"n": 1}
    await asyncio.sleep(0.05)
    assert (await lean.send(post(server.url(), idempotent=False))).body == {"ok": True}
    assert (server.connections, len(server.requests)) == (2, 2)


async def test_close_ends_requests_in_flight_and_refuses_new_ones(server: Scripted) -> None:
    transport = LeanTransport(retry=FAST)
    server.scripts = [[HANG]]
    flight = asyncio.ensure_future(transport.send(post(server.url())))
    await eventually(lambda: len(server.requests) == 1)
    await transport.aclose()
    with pytest.raises(ClosedError):
        await flight
    with pytest.raises(ClosedError):
        await transport.send(post(server.url()))


async def test_close_during_a_retry_s_backoff_sends_nothing_more(server: Scripted) -> None:
    transport = LeanTransport(retry=FixedBackoff(attempts=3))
    server.scripts = [[CLOSE]]  # the connection drops unanswered: an idempotent request waits
    flight = asyncio.ensure_future(transport.send(post(server.url(), idempotent=True)))
    await eventually(lambda: len(server.requests) == 1 and server.live == 0)
    await transport.aclose()
    with pytest.raises(ClosedError):
        await flight
    await asyncio.sleep(0.6)
    assert len(server.requests) == 1


async def test_close_cuts_an_answer_read_until_the_end_of_its_connection(server: Scripted) -> None:
    transport = LeanTransport(retry=FAST)
    server.scripts = [[b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhalf", HANG]]
    flight = asyncio.ensure_future(transport.send(post(server.url())))
    await eventually(lambda: len(server.requests) == 1)
    await asyncio.sleep(0.05)
    await transport.aclose()
    with pytest.raises(ClosedError):
        await flight  # not "half" as a whole answer


async def test_a_caller_s_user_agent_replaces_ours(server: Scripted, lean: LeanTransport) -> None:
    await lean.send(
        HttpRequest(method="GET", url=server.url("/health"), headers={"user-agent": "harness/1"})
    )
    lines = server.requests[0].split(b"\r\n")
    assert [line for line in lines if line.lower().startswith(b"user-agent")] == [
        b"user-agent: harness/1"
    ]


async def test_a_cancelled_request_drops_its_connection(
    server: Scripted, lean: LeanTransport
) -> None:
    server.scripts = [[HANG]]
    flight = asyncio.ensure_future(lean.send(post(server.url())))
    await eventually(lambda: len(server.requests) == 1)
    flight.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flight
    assert (await lean.send(post(server.url()))).body == {"ok": True}
    assert server.connections == 2  # the half-answered connection was not reused


async def test_a_second_event_loop_gets_fresh_connections() -> None:
    transport = LeanTransport(retry=FAST)

    async def one_call() -> Any:
        async with LocalGym.demo() as gym:
            response = await transport.send(HttpRequest(method="GET", url=f"{gym.url}/health"))
            return response.status

    assert await asyncio.to_thread(asyncio.run, one_call()) == 200
    assert await asyncio.to_thread(asyncio.run, one_call()) == 200
    await transport.aclose()


async def test_the_end_of_an_event_loop_closes_its_idle_connections(server: Scripted) -> None:
    transport = LeanTransport(retry=FAST)

    async def one_call() -> Any:
        return (await transport.send(post(server.url()))).body

    assert await asyncio.to_thread(asyncio.run, one_call()) == {"ok": True}
    await eventually(lambda: server.live == 0)  # asyncio.run ended: its socket was closed
    assert server.connections == 1


# -- whole MCP exchanges against real servers ---------------------------------------------------


async def test_fastmcp_calls_notifications_and_server_requests(fastmcp: UvicornThread) -> None:
    transport = LeanTransport()
    async with GymClient(fastmcp.url, name="fastmcp", transport=transport) as client:
        assert {"add", "big", "pings"} <= {tool["name"] for tool in await client.list_tools()}
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": n, "b": 1}, database_id="db") for n in range(20))
        )
        assert [r.text for r in results] == [str(n + 1) for n in range(20)]
        assert (await client.call_tool("chatty", {}, database_id="db")).text == "done"
        assert (
            len((await client.call_tool("big", {"size": 5_000_000}, database_id="db")).text)
            == 5_000_000
        )
        failed = await client.call_tool("fail", {"message": "nope"}, database_id="db")
        assert failed.is_error and "nope" in failed.text
        seen = (await client.call_tool("echo_headers", {}, database_id="db_9")).structured
        assert seen["x-database-id"] == "db_9" and seen["user-agent"].startswith("eog-core/")
    await transport.aclose()


async def test_fastmcp_server_requests_on_the_call_s_stream(fastmcp_sse: UvicornThread) -> None:
    transport = LeanTransport()
    async with GymClient(fastmcp_sse.url, transport=transport, timeouts=Timeouts(rpc=20)) as client:
        assert (await client.call_tool("pings", {}, database_id=None)).text == "pong"
        refused = await client.call_tool("elicits", {}, database_id=None)  # answered -32601
        assert refused.is_error and "Method not found" in refused.text
    await transport.aclose()


async def test_fastmcp_standalone_stream_and_timeout(fastmcp: UvicornThread) -> None:
    transport = LeanTransport()
    async with connection_pool():
        async with GymClient(
            fastmcp.url, server_stream=True, transport=transport, timeouts=Timeouts(rpc=20)
        ) as client:
            assert (await client.call_tool("pings_alone", {}, database_id=None)).text == "pong"
        async with GymClient(
            fastmcp.url, transport=transport, timeouts=Timeouts(rpc=0.5)
        ) as client:
            with pytest.raises(GymTimeoutError):
                await client.call_tool("hang", {}, database_id=None)
    await eventually(lambda: not _mcp_stream._LISTENING)
    await transport.aclose()


async def test_a_task_lifecycle_scores_the_same_with_either_transport() -> None:
    paths = demo_paths()
    task = load_task(paths.task)
    verdicts = []
    async with LocalGym.demo() as gym:
        for transport in (LeanTransport(), None):  # None: the default, pooled aiohttp
            session = await TaskSession.start(
                task,
                directory=GymDirectory({DEMO_SERVER_NAME: gym.url}),
                seed_root=paths.directory,
                transport=transport,
            )
            found = await session.call_tool("find_account", {"name": "Harbor Lane"})
            refused = await session.call_tool("not_a_tool", {})
            verdict = await session.verify()
            await session.aclose()
            if transport is not None:
                await transport.aclose()
            verdicts.append(
                (
                    found.raw,
                    refused.is_error,
                    verdict.reward,
                    verdict.num_passed,
                    [(r.name, r.actual) for r in verdict.results],
                )
            )
        assert gym.database_ids() == []  # both sessions deleted what they seeded
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][1] is True
