"""LeanTransport's bound on an answer's size (issue 29: one streaming gym grew the
reader to 295 MiB): a scripted loopback server answers past ``max_body`` by length,
in chunks and as an event stream that never ends, and gets a typed error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from eog_core.errors import GymProtocolError
from eog_core.gym import LeanTransport

from .test_lean_transport import CLOSE, FAST, Scripted, json_answer, post, server

__all__ = ["server"]  # the fixture, used by name

BOUND = 4096


@pytest.fixture
async def bounded() -> AsyncIterator[LeanTransport]:
    transport = LeanTransport(retry=FAST, max_body=BOUND)
    yield transport
    await transport.aclose()


def chunked_head(content_type: str = "application/json") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_an_answer_up_to_the_bound_is_read(server: Scripted, bounded: LeanTransport) -> None:
    value = {"pad": "x" * (BOUND - 20)}
    assert len(json.dumps(value)) <= BOUND
    server.scripts.append([json_answer(value)])
    assert (await bounded.send(post(server.url()))).body == value


async def test_a_content_length_past_the_bound_is_refused_unread(
    server: Scripted, bounded: LeanTransport
) -> None:
    server.scripts.append([json_answer({"pad": "x" * BOUND})])
    with pytest.raises(GymProtocolError, match="max_body"):
        await bounded.send(post(server.url(), idempotent=True))
    assert len(server.requests) == 1  # not retried


async def test_chunks_past_the_bound_are_refused(server: Scripted, bounded: LeanTransport) -> None:
    pieces: list[bytes | str] = [chunked_head()]
    pieces += [chunk(b"x" * 1000) for _ in range(6)]
    server.scripts.append([*pieces, chunk(b""), CLOSE])
    with pytest.raises(GymProtocolError, match="max_body"):
        await bounded.send(post(server.url()))


async def test_one_huge_chunk_is_refused_once_past_the_bound(
    server: Scripted, bounded: LeanTransport
) -> None:
    """A chunk announcing 1 TiB is read as it arrives (llhttp does not tell its size):
    refused once its bytes pass the bound, never buffered past it, not retried."""
    data = [b"x" * 1024 for _ in range(2 * BOUND // 1024)]
    server.scripts.append([chunked_head(), b"%x\r\n" % (1 << 40), *data, CLOSE])
    with pytest.raises(GymProtocolError, match="max_body"):
        await bounded.send(post(server.url(), idempotent=True))
    assert len(server.requests) == 1


async def test_an_endless_event_stream_is_cut_at_the_bound(
    server: Scripted, bounded: LeanTransport
) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    comments = [b": keep reading\n\n" * 64 for _ in range(8)]  # 8 KiB, no answer
    server.scripts.append([head, *comments, CLOSE])
    with pytest.raises(GymProtocolError, match="max_body"):
        await bounded.send(post(server.url()))


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_body"):
        LeanTransport(max_body=0)
