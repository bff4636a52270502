"""A floor for the gateway: the least a proxy built on the gateway's parts runs per request.

``python benchmarks/gateway_floor.py --gym URL --port P --records DIR [--client raw|gymclient]
[--defer-records]``

``benchmarks/gateway_instructions.py --kinds gateway,floor`` runs it under callgrind in
place of ``eog-core gateway`` and drives it with the same agents and requests. The parts
are the gateway's: an asyncio server (``loop.create_server``) reading requests with
:class:`eog_core._http1.RequestReader` (llhttp), stdlib ``json``'s C scanner and encoder
(through the gateway's ``eog_core._json.loads_bytes`` and ``dumps_default``: built once,
no ``json.loads`` whitespace regex), and :class:`eog_core.gym.LeanTransport` to the gym
(a tool call's request made with the gateway's ``new_request``). Nothing else runs per
request: no Host, token or MCP session check, no per-rollout limit, no timeouts of its own;
one request at a time per connection; a request that fails (a gym's error) is answered 502
with no body, not as a tool's error.

Routes (one port for all of them; ``GatewayAgent`` of ``gateway_vs_direct.py`` sends them):

- ``POST /rollouts``: 201 ``{"rollout_id", "mcp_url"}``;
- ``DELETE /rollouts/{id}``: the rollout's database is deleted on the gym, 200;
- ``POST /mcp/{id}``: ``initialize`` seeds the rollout's database on the gym (the demo
  seed) and answers with an ``mcp-session-id``; a notification is answered 202; ``ping``
  ``{}``; ``tools/call`` is sent on to the gym in one MCP session shared by every rollout
  (as the gateway's ``share_mcp``) with the database's and the task context's headers,
  answered with the gym's result, and recorded as one JSON line in ``DIR/calls.jsonl``
  (``--defer-records``: kept in memory and written when the rollout ends, as the gateway
  does: a tuple a call, its JSON line encoded outside the measured requests).

``--client raw`` (the default) sends with ``LeanTransport.send`` itself (the MCP handshake
once, at start); ``--client gymclient``: ``GymClient(share_mcp=True)`` over a
``LeanTransport``, as the gateway's task sessions do (its seeding, headers and checks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import IO, Any

from eog_core import load_task
from eog_core._http1 import Limits, Message, RequestReader
from eog_core._json import dumps_default, loads_bytes
from eog_core.gym import GymClient, HttpRequest, LeanTransport, context_headers, new_database_id
from eog_core.gym._http import new_request
from eog_core.local import demo_paths, read_demo_seed

VERSION = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
_JSON = b"Content-Type: application/json\r\n"
_STATUS = {
    200: b"200 OK",
    201: b"201 Created",
    202: b"202 Accepted",
    404: b"404 Not Found",
    502: b"502 Bad Gateway",
}


def _answer(status: int, body: bytes = b"", extra: bytes = b"") -> bytes:
    """One keep-alive HTTP/1.1 answer, head and body."""
    kind = _JSON if body else b""
    head = b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s%s\r\n" % (
        _STATUS[status],
        len(body),
        kind,
        extra,
    )
    return head + body


class Rollout:
    """One rollout: its MCP path, the agent's session id, its database on the gym."""

    __slots__ = ("calls", "database_id", "gym_headers", "rollout_id", "session_id")

    def __init__(self, rollout_id: str) -> None:
        self.rollout_id = rollout_id
        self.session_id = ""
        self.database_id = ""
        self.gym_headers: dict[str, str] = {}  # a tools/call's headers to the gym
        self.calls: list[tuple[Any, ...]] = []  # with --defer-records: the calls not written


class Gym:
    """The gym as the floor sees it: seed, delete, call a tool (one MCP session, shared)."""

    def __init__(self, url: str, client: str) -> None:
        self.url = url.rstrip("/")
        self.mcp_url = f"{self.url}/mcp"
        self.transport = LeanTransport()
        gym = load_task(demo_paths().task).gym_servers[0]
        self.name, self.context = gym.name, dict(gym.context)
        self.context_headers = context_headers(self.context)
        self.client = (
            GymClient(self.url, name=self.name, transport=self.transport, share_mcp=True)
            if client == "gymclient"
            else None
        )
        self.session: dict[str, str] = {}  # raw: the MCP session's headers
        self.ids = 0

    async def _post(self, url: str, payload: Any, headers: dict[str, str]) -> Any:
        request = HttpRequest(method="POST", url=url, headers=headers, json=payload, raw_body=True)
        return await self.transport.send(request)

    async def open(self) -> None:
        """The MCP handshake (raw; a GymClient shakes hands on its first call)."""
        if self.client is not None:
            return
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "gateway-floor", "version": "0"},
            },
        }
        answer = await self._post(self.mcp_url, init, {"Accept": ACCEPT})
        self.session = {
            "Accept": ACCEPT,
            "mcp-session-id": answer.headers["mcp-session-id"],
            "MCP-Protocol-Version": VERSION,
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self._post(self.mcp_url, note, self.session)

    async def seed(self, rollout: Rollout) -> None:
        sql = read_demo_seed()
        if self.client is not None:
            rollout.database_id = await self.client.seed_database(sql)
            return
        rollout.database_id = new_database_id()
        seed = {
            "database_id": rollout.database_id,
            "name": "floor",
            "description": "gateway floor",
            "sql_content": sql,
        }
        await self._post(f"{self.url}/api/seed-database", seed, {})
        rollout.gym_headers = {
            **self.session,
            **self.context_headers,
            "x-database-id": rollout.database_id,
        }

    async def delete(self, rollout: Rollout) -> None:
        if rollout.database_id:
            request = HttpRequest(
                method="DELETE",
                url=f"{self.url}/api/delete-database",
                json={"database_id": rollout.database_id},
                raw_body=True,
            )
            await self.transport.send(request)

    async def call(self, rollout: Rollout, params: dict[str, Any]) -> Any:
        """A ``tools/call`` on the gym: its result (a JSON-RPC error is not expected here)."""
        if self.client is not None:
            result = await self.client.call_tool(
                params["name"],
                params.get("arguments"),
                database_id=rollout.database_id,
                context=self.context,
            )
            return result.raw
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params}
        request = new_request(  # HttpRequest(...) without its keywords' cost, as the gateway
            "POST",
            self.mcp_url,
            rollout.gym_headers,
            body,
            60.0,  # timeout
            10.0,  # connect_timeout
            False,  # idempotent: a tool call is never sent twice
            self.name,
            None,  # sse_until: the gym answers JSON
            None,  # on_message
            True,  # raw_body: decoded here
            None,  # deadline
        )
        answer = await self.transport.send(request)
        return loads_bytes(answer.raw)["result"]


class Floor:
    """The rollouts, the gym, the records file."""

    def __init__(self, gym: Gym, records: IO[str], base: str, *, defer: bool) -> None:
        self.gym, self.records, self.base, self.defer = gym, records, base, defer
        self.rollouts: dict[str, Rollout] = {}  # by the request path they answer on

    def answer(self, message: Message) -> bytes | Coroutine[Any, Any, bytes]:
        """The answer to ``message``, or the coroutine that makes it (the gym is asked)."""
        path = message.target
        if path == "/rollouts":
            rollout_id = secrets.token_hex(8)
            self.rollouts[f"/mcp/{rollout_id}"] = Rollout(rollout_id)
            opened = {"rollout_id": rollout_id, "mcp_url": f"{self.base}/mcp/{rollout_id}"}
            return _answer(201, json.dumps(opened).encode())
        if message.method == "DELETE":
            found = self.rollouts.pop(f"/mcp/{path.rpartition('/')[2]}", None)
            return _answer(404) if found is None else self.abandon(found)
        rollout = self.rollouts.get(path)
        if rollout is None:
            return _answer(404)
        request = loads_bytes(message.body)
        method = request["method"]
        if method == "tools/call":
            return self.call(rollout, request)
        if "id" not in request:  # a notification
            return _answer(202)
        if method == "ping":
            return _answer(200, b'{"jsonrpc": "2.0", "id": %s, "result": {}}' % _id(request))
        if method == "initialize":
            return self.initialize(rollout, request)
        raise ValueError(f"the floor does not answer {method!r}")

    async def initialize(self, rollout: Rollout, request: dict[str, Any]) -> bytes:
        await self.gym.seed(rollout)
        rollout.session_id = secrets.token_hex(16)
        result = {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "gateway-floor", "version": "0"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        return _answer(200, body, b"mcp-session-id: %s\r\n" % rollout.session_id.encode())

    async def abandon(self, rollout: Rollout) -> bytes:
        for call in rollout.calls:
            self.record(rollout, *call)
        rollout.calls.clear()
        await self.gym.delete(rollout)
        return _answer(200, b'{"state": "abandoned"}')

    async def call(self, rollout: Rollout, request: dict[str, Any]) -> bytes:
        """A ``tools/call``: sent on, answered with the gym's result, recorded."""
        params = request["params"]
        started = time.time()
        text = dumps_default(await self.gym.call(rollout, params))
        ended = time.time()
        body = b'{"jsonrpc": "2.0", "id": %s, "result": %s}' % (_id(request), text.encode())
        call = (request["id"], params["name"], params.get("arguments"), started, ended, text)
        if self.defer:
            rollout.calls.append(call)
        else:
            self.record(rollout, *call)
        return _answer(200, body)

    def record(
        self,
        rollout: Rollout,
        call_id: Any,
        name: str,
        arguments: Any,
        started: float,
        ended: float,
        observation: str,
    ) -> None:
        """One JSON line in the records file."""
        line = {
            "rollout_id": rollout.rollout_id,
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "started_at": started,
            "latency_ms": round((ended - started) * 1000, 3),
            "observation": observation,
        }
        self.records.write(dumps_default(line) + "\n")


def _id(request: dict[str, Any]) -> bytes:
    """A JSON-RPC request's id as JSON text."""
    request_id = request["id"]
    return b"%d" % request_id if type(request_id) is int else json.dumps(request_id).encode()


class Connection(asyncio.Protocol):
    """One agent connection: requests answered one at a time, in order."""

    def __init__(self, floor: Floor, limits: Limits) -> None:
        self.floor = floor
        self.reader = RequestReader(limits)
        self.transport: asyncio.Transport | None = None
        self.busy = False
        self.task: asyncio.Task[None] | None = None  # the request being answered (held)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        self._next()

    def _next(self) -> None:
        while not self.busy and (message := self.reader.pop()) is not None:
            answer = self.floor.answer(message)
            if isinstance(answer, bytes):
                self._write(answer)
            else:
                self.busy = True
                self.task = asyncio.get_running_loop().create_task(self._finish(answer))

    async def _finish(self, answer: Coroutine[Any, Any, bytes]) -> None:
        try:
            self._write(await answer)
        except Exception:  # a gym's error: the floor does not answer it as a tool's
            self._write(_answer(502))
        self.busy, self.task = False, None
        self._next()

    def _write(self, answer: bytes) -> None:
        if self.transport is not None:
            self.transport.write(answer)


async def serve(gym_url: str, port: int, records: IO[str], client: str, defer: bool) -> None:
    """Serve until SIGTERM (then the records are flushed, the gym's connections closed)."""
    gym = Gym(gym_url, client)
    await gym.open()
    floor, limits = Floor(gym, records, f"http://127.0.0.1:{port}", defer=defer), Limits()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await loop.create_server(lambda: Connection(floor, limits), "127.0.0.1", port)
    async with server:
        await stop.wait()
    if gym.client is not None:
        await gym.client.aclose()
    await gym.transport.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gym", required=True, help="the gym's base URL")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--records", type=Path, required=True, help="calls.jsonl goes here")
    parser.add_argument("--client", choices=("raw", "gymclient"), default="raw")
    parser.add_argument(
        "--defer-records",
        action="store_true",
        help="write a rollout's records when it ends (as the gateway), not one line a call",
    )
    args = parser.parse_args()
    args.records.mkdir(parents=True, exist_ok=True)
    with (args.records / "calls.jsonl").open("a", encoding="utf-8") as records:
        asyncio.run(serve(args.gym, args.port, records, args.client, args.defer_records))


if __name__ == "__main__":
    main()
