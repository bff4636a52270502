"""LeanTransport's bound on requests in flight, and its check of an idle connection before
reuse (one ``poll(2)``; ``select`` where there is no poll), on the scripted server of
``test_lean_transport``."""

from __future__ import annotations

import asyncio
import socket

import pytest

from eog_core._http1 import Limits
from eog_core.errors import GymTimeoutError
from eog_core.gym import LeanTransport, _lean, _lean_connection
from eog_core.gym._lean_connection import Connection

from .conftest import eventually
from .test_lean_transport import FAST, HANG, Scripted, json_answer, post
from .test_lean_transport import server as server  # (the fixture)


async def test_requests_over_the_limit_wait_their_turn_in_order(
    server: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lean, "_LIMIT", 1)
    transport = LeanTransport(retry=FAST)
    try:
        server.scripts = [[json_answer({"n": n})] for n in range(1, 4)]
        first = asyncio.ensure_future(transport.send(post(server.url())))
        await eventually(lambda: len(server.requests) == 1)
        later = [asyncio.ensure_future(transport.send(post(server.url()))) for _ in range(2)]
        bodies = [(await flight).body for flight in [first, *later]]
        assert bodies == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert server.connections == 1  # one at a time: one connection did for all
    finally:
        await transport.aclose()


async def test_a_request_waiting_for_a_slot_times_out_and_a_cancelled_one_frees_its_turn(
    server: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lean, "_LIMIT", 1)
    transport = LeanTransport(retry=FAST)
    try:
        server.scripts = [[HANG]]
        holder = asyncio.ensure_future(transport.send(post(server.url(), timeout=30.0)))
        await eventually(lambda: len(server.requests) == 1)
        with pytest.raises(GymTimeoutError, match="every connection of the transport was busy"):
            await transport.send(post(server.url(), timeout=0.1))
        waiting = asyncio.ensure_future(transport.send(post(server.url())))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        holder.cancel()
        with pytest.raises(asyncio.CancelledError):
            await holder
        assert (await transport.send(post(server.url()))).body == {"ok": True}
        assert len(server.requests) == 2  # the timed-out and the cancelled one never left
    finally:
        await transport.aclose()


@pytest.mark.parametrize("with_poll", [True, False])
async def test_an_idle_connection_whose_peer_closed_is_stale_before_the_loop_reads_it(
    with_poll: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not with_poll:
        monkeypatch.setattr(_lean_connection, "_poll", None)
    near, far = socket.socketpair()
    try:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: Connection(Limits()), sock=near)
        assert (conn.poller is not None) == with_poll
        assert not conn.stale()
        far.close()  # the peer closes; the loop has not run its callback yet
        assert conn.stale()
        conn.close()
    finally:
        far.close()
