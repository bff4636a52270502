"""A task's whole lifecycle through TaskSession against a raw aiohttp floor, interleaved.

``python benchmarks/lifecycle_vs_floor.py [--servers local,fastmcp] [--rounds 6]``

For each server (LocalGym, ``eog-core serve-local``; the official SDK's FastMCP
in JSON mode with the EOG REST routes, ``tests/gym/fastmcp_gym.py``), each in
its own process, one event loop alternates rounds of:

- ``ours``: ``TaskSession.start`` (seed), one ``call_tool``, ``verify`` with 5
  ``database_state`` verifiers (strict), close (delete), through a
  ``GymDirectory`` held open (shared MCP session, cached tool list);
- ``floor``: pooled aiohttp sharing one MCP session per gym and sending the
  same 8 requests (seed, ``tools/call``, the 5 ``/api/sql-runner`` queries
  concurrently, delete), with no checks beyond decoding the answers; with
  ``--floor lean``, the same requests sent raw with ``LeanTransport`` (the wall-clock
  side of ``lifecycle_instructions.py``'s ``floor_lean``).

It prints the median lifecycle latency at concurrency 1, lifecycles per second
at concurrency 16 and 64 (with the directory's default bound of 4 seeds in
flight per replica, and with seeds unbounded as the floor's are), and client
CPU per tool call (``TaskSession`` and
``GymClient`` against the raw loop on the same shared MCP session), each with
its ratio to the floor. ``python benchmarks/lifecycle_vs_floor.py trace`` prints
the requests one task sends, as the FastMCP gym logs them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gym.lifecycle_task import QUERIES, TOOL, five_verifier_task  # noqa: E402

from bench_gym_client import wait_for_port  # noqa: E402
from eog_core import STRICT, Task  # noqa: E402
from eog_core._http1 import Limits, Message, ResponseReader  # noqa: E402
from eog_core.gym import (  # noqa: E402
    GymClient,
    GymDirectory,
    HttpRequest,
    Janitor,
    LeanTransport,
    TaskSession,
    new_database_id,
)
from eog_core.local import DEMO_SERVER_NAME, read_demo_seed  # noqa: E402

ACCEPT = "application/json, text/event-stream"
Lifecycle = Callable[[], Awaitable[None]]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "floor", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


# -- servers ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    if kind == "local":
        command = [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)]
    else:
        command = [sys.executable, __file__, "serve-fastmcp", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, wait_for_port(process, port)


def serve_fastmcp(port: int) -> None:
    import uvicorn
    from tests.gym.fastmcp_gym import build_fastmcp_gym

    uvicorn.run(
        build_fastmcp_gym(), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )


# -- the two clients ------------------------------------------------------------


class Floor:
    """Raw pooled aiohttp, one MCP session per gym, the same 8 requests per task."""

    def __init__(self, url: str, task: Task, seed: str, *, keepalive: float = 15.0) -> None:
        self.url, self.seed = url, seed
        gym = task.gym_servers[0]
        self.context = {
            ("x-" + k.lower().replace("_", "-") if not k.lower().startswith("x-") else k): str(v)
            for k, v in (gym.context or {}).items()
        }
        # aiohttp's default connector (15 s keep-alive unless told otherwise)
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(keepalive_timeout=keepalive)
        )
        self.mcp: dict[str, str] = {}
        self.ids = 0

    async def open(self) -> None:
        async with self.session.post(
            f"{self.url}/mcp", json=INITIALIZE, headers={"Accept": ACCEPT}
        ) as response:
            await response.read()
            self.mcp = {
                "Accept": ACCEPT,
                "mcp-session-id": response.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-06-18",
            }
        async with self.session.post(
            f"{self.url}/mcp", json=INITIALIZED, headers=self.mcp
        ) as response:
            await response.read()

    async def close(self) -> None:
        async with self.session.delete(f"{self.url}/mcp", headers=self.mcp) as response:
            await response.read()
        await self.session.close()

    async def tool_call(self, database_id: str) -> None:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": TOOL[0], "arguments": TOOL[1]},
        }
        headers = {**self.mcp, **self.context, "x-database-id": database_id}
        async with self.session.post(f"{self.url}/mcp", json=body, headers=headers) as response:
            answer = json.loads(await response.read())
        assert not answer["result"].get("isError"), answer

    async def query(self, database_id: str, query: str) -> Any:
        headers = {**self.context, "x-database-id": database_id}
        async with self.session.post(
            f"{self.url}/api/sql-runner",
            headers=headers,
            json={"query": query, "database_id": database_id},
        ) as response:
            response.raise_for_status()
            return json.loads(await response.read())

    async def seed_database(self, database_id: str) -> None:
        seed = {
            "database_id": database_id,
            "name": "floor",
            "description": "floor",
            "sql_content": self.seed,
        }
        async with self.session.post(f"{self.url}/api/seed-database", json=seed) as response:
            response.raise_for_status()
            await response.read()

    async def delete_database(self, database_id: str) -> None:
        async with self.session.delete(
            f"{self.url}/api/delete-database", json={"database_id": database_id}
        ) as response:
            response.raise_for_status()
            await response.read()

    async def lifecycle(self) -> None:
        database_id = new_database_id()
        await self.seed_database(database_id)
        await self.tool_call(database_id)
        await asyncio.gather(*(self.query(database_id, q) for q in QUERIES))
        await self.delete_database(database_id)


class _FloorConnection(asyncio.Protocol):
    """One keep-alive connection of :class:`LeanFloor`: answers framed by ``_http1``."""

    def __init__(self) -> None:
        self.reader = ResponseReader(Limits())
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        if self.reader.ready and self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("the gym closed the connection"))

    async def exchange(self, data: bytes) -> Message:
        assert self.transport is not None
        self.transport.write(data)
        while (answer := self.reader.pop()) is None:
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return answer


class _RawFloor(Floor):
    """The floor's requests over a transport of ours (``_send``: the answer's status,
    headers and decoded JSON body)."""

    async def _send(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Mapping[str, str], Any]:
        raise NotImplementedError

    async def _close_connections(self) -> None:
        raise NotImplementedError

    async def open(self) -> None:
        _, headers, _ = await self._send("POST", "/mcp", INITIALIZE, {"Accept": ACCEPT})
        self.mcp = {
            "Accept": ACCEPT,
            "mcp-session-id": headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-06-18",
        }
        await self._send("POST", "/mcp", INITIALIZED, self.mcp)

    async def close(self) -> None:
        await self._send("DELETE", "/mcp", None, self.mcp)
        await self._close_connections()
        await self.session.close()

    async def tool_call(self, database_id: str) -> None:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": TOOL[0], "arguments": TOOL[1]},
        }
        headers = {**self.mcp, **self.context, "x-database-id": database_id}
        _, _, answer = await self._send("POST", "/mcp", body, headers)
        assert not answer["result"].get("isError"), answer

    async def query(self, database_id: str, query: str) -> Any:
        headers = {**self.context, "x-database-id": database_id}
        body = {"query": query, "database_id": database_id}
        status, _, answer = await self._send("POST", "/api/sql-runner", body, headers)
        assert status == 200, status
        return answer

    async def seed_database(self, database_id: str) -> None:
        seed = {
            "database_id": database_id,
            "name": "floor",
            "description": "floor",
            "sql_content": self.seed,
        }
        status, _, _ = await self._send("POST", "/api/seed-database", seed)
        assert status < 300, status

    async def delete_database(self, database_id: str) -> None:
        body = {"database_id": database_id}
        status, _, _ = await self._send("DELETE", "/api/delete-database", body)
        assert status < 300, status


class LeanFloor(_RawFloor):
    """The floor on the new framing: keep-alive connections on asyncio protocols, answers
    read by ``eog_core._http1`` (llhttp), one MCP session, the same 8 requests, no checks
    beyond decoding the answers. What any client on the framing runs at the least."""

    def __init__(self, url: str, task: Task, seed: str, *, keepalive: float = 15.0) -> None:
        super().__init__(url, task, seed, keepalive=keepalive)
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.authority = f"{self.host}:{self.port}"
        self.idle: list[_FloorConnection] = []

    async def _send(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Mapping[str, str], Any]:
        conn = self.idle.pop() if self.idle else None
        if conn is None:
            _, conn = await asyncio.get_running_loop().create_connection(
                _FloorConnection, self.host, self.port
            )
        data = b"" if body is None else json.dumps(body).encode()
        lines = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.authority}\r\n{lines}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        answer = await conn.exchange(head.encode() + data)
        self.idle.append(conn)
        return answer.status, answer.headers, json.loads(answer.body) if answer.body else None

    async def _close_connections(self) -> None:
        for conn in self.idle:
            assert conn.transport is not None
            conn.transport.close()


class TransportFloor(_RawFloor):
    """The floor on the new framing's pooled client: the same 8 requests sent raw with
    :class:`~eog_core.gym.LeanTransport` (its pool, timeouts, retries and typed errors;
    no MCP session object, no checks beyond the decoded answers), as ``Floor`` sends them
    raw with aiohttp's pooled client."""

    def __init__(self, url: str, task: Task, seed: str, *, keepalive: float = 15.0) -> None:
        super().__init__(url, task, seed, keepalive=keepalive)
        self.transport = LeanTransport(keepalive=keepalive)

    async def _send(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Mapping[str, str], Any]:
        answer = await self.transport.send(
            HttpRequest(method=method, url=self.url + path, headers=headers or {}, json=body)
        )
        return answer.status, answer.headers, answer.body

    async def _close_connections(self) -> None:
        await self.transport.aclose()


class Ours:
    """TaskSession through a directory held open (shared MCP session, cached tools)."""

    def __init__(self, url: str, task: Task, seed: str, *, max_concurrent_seeds: int = 4) -> None:
        self.task, self.seed = task, {DEMO_SERVER_NAME: seed}
        self.directory = GymDirectory(
            {DEMO_SERVER_NAME: url}, max_concurrent_seeds=max_concurrent_seeds
        )
        self.janitor = Janitor()

    async def open(self) -> None:
        await self.directory.__aenter__()

    async def close(self) -> None:
        await self.directory.aclose()
        assert await self.janitor.aclose() == []

    async def lifecycle(self) -> None:
        async with TaskSession.start(
            self.task, directory=self.directory, seed_sql=self.seed, janitor=self.janitor
        ) as session:
            result = await session.call_tool(*TOOL)
            assert not result.is_error, result.text
            verdict = await session.verify(policy=STRICT)
            assert verdict.num_scored == 5 and verdict.evaluation_completed


# -- measuring ------------------------------------------------------------------


async def _spread(lifecycle: Lifecycle, count: int, concurrency: int) -> None:
    async def worker(offset: int) -> None:
        for _ in range(offset, count, concurrency):
            await lifecycle()

    await asyncio.gather(*(worker(offset) for offset in range(concurrency)))


async def _timed_each(lifecycle: Lifecycle, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await lifecycle()
        times.append(time.perf_counter() - started)
    return times


def _order(round_: int, names: list[str]) -> list[str]:
    return names if round_ % 2 == 0 else names[::-1]


async def measure(
    url: str, rounds: int, sequential: int, spread: int, floor: str = "aiohttp"
) -> dict[str, Any]:
    """Paired rounds: each round runs both clients back to back (order alternating), so
    a pair shares the machine's load; the figures are medians over rounds and the
    median of the per-round ratios."""
    task, seed = five_verifier_task(), read_demo_seed()
    # "ours" keeps the directory's default seed bound (4 per replica, as the EOG containers
    # need); the floor has none, so "unbounded" (a bound the concurrency never reaches)
    # shows the client's own cost at concurrency.
    clients: dict[str, Floor | Ours] = {
        "floor": Floor(url, task, seed) if floor == "aiohttp" else TransportFloor(url, task, seed),
        "ours": Ours(url, task, seed),
        "unbounded": Ours(url, task, seed, max_concurrent_seeds=1024),
    }
    names = ["floor", "ours"]
    for client in clients.values():
        await client.open()
    figures: dict[str, Any] = {}
    try:
        for client in clients.values():  # warm-up: handshakes, tool list, connections, caches
            await _spread(client.lifecycle, 64, 16)
        # First, while both pools hold the few connections of the warm-up: the bursts of
        # the throughput rounds leave dozens open, which skews later per-call figures.
        figures["cpu_us_per_call"] = await _tool_call_cpu(url, clients["floor"], task, seed, rounds)
        latency: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(rounds):
            for name in _order(round_, names):
                used = time.process_time()
                times = await _timed_each(clients[name].lifecycle, sequential)
                cpu[name].append((time.process_time() - used) / sequential * 1e6)
                latency[name].append(statistics.median(times) * 1000)
        figures["latency_ms"] = _summary(latency)
        figures["cpu_us_per_lifecycle"] = _summary(cpu)
        for concurrency in (16, 64):
            rates: dict[str, list[float]] = {name: [] for name in clients}
            for round_ in range(rounds):
                for name in _order(round_, list(clients)):
                    started = time.perf_counter()
                    await _spread(clients[name].lifecycle, spread, concurrency)
                    rates[name].append(spread / (time.perf_counter() - started))
            figures[f"rate_{concurrency}"] = _summary(rates)
            figures[f"rate_{concurrency}_unbounded"] = _summary(
                {"floor": rates["floor"], "ours": rates["unbounded"]}
            )
    finally:
        for client in clients.values():
            await client.close()
    return figures


def _summary(values: dict[str, list[float]]) -> dict[str, float]:
    """Medians of each client, and the median of the paired ours/floor ratios."""
    ratios = [o / f for o, f in zip(values["ours"], values["floor"], strict=True)]
    return {
        "floor": statistics.median(values["floor"]),
        "ours": statistics.median(values["ours"]),
        "ratio": statistics.median(ratios),
        "ratio_q1": statistics.quantiles(ratios, n=4)[0],
        "ratio_q3": statistics.quantiles(ratios, n=4)[2],
    }


async def _tool_call_cpu(
    url: str, floor: Floor | Ours, task: Task, seed: str, rounds: int, calls: int = 200
) -> dict[str, float]:
    """Client CPU per ``tools/call`` at concurrency 1 on one open session/database."""
    assert isinstance(floor, Floor)
    async with (
        GymDirectory({DEMO_SERVER_NAME: url}) as directory,
        TaskSession.start(task, directory=directory, seed_sql={DEMO_SERVER_NAME: seed}) as session,
    ):
        database_id = session.database_ids[DEMO_SERVER_NAME]
        gym = task.gym_servers[0]
        client = GymClient(url, name=DEMO_SERVER_NAME, share_mcp=True)

        async def ours() -> None:
            assert not (await session.call_tool(*TOOL)).is_error

        async def gym_client() -> None:
            result = await client.call_tool(*TOOL, database_id=database_id, context=gym.context)
            assert not result.is_error

        async def raw() -> None:
            await floor.tool_call(database_id)

        loops = {"raw": raw, "ours": ours, "gym_client": gym_client}
        used: dict[str, list[float]] = {name: [] for name in loops}
        for loop in loops.values():  # warm-up
            for _ in range(20):
                await loop()
        for round_ in range(rounds):
            for name in _order(round_, list(loops)):
                started = time.process_time()
                for _ in range(calls):
                    await loops[name]()
                used[name].append((time.process_time() - started) / calls * 1e6)
        await client.aclose()
        session.trajectory.clear()
    raw = used["raw"]
    return {
        "raw": statistics.median(raw),
        **{name: statistics.median(used[name]) for name in ("ours", "gym_client")},
        **{
            f"{name}_ratio": statistics.median(
                [o / r for o, r in zip(used[name], raw, strict=True)]
            )
            for name in ("ours", "gym_client")
        },
    }


def report(server: str, figures: dict[str, Any]) -> None:
    def line(what: str, key: str, unit: str, target: str) -> None:
        f = figures[key]
        print(
            f"{server}: {what}: floor {f['floor']:.2f}{unit}, TaskSession {f['ours']:.2f}{unit}, "
            f"paired ratio {f['ratio']:.3f} (IQR {f['ratio_q1']:.3f}-{f['ratio_q3']:.3f}; "
            f"target {target})"
        )

    line("lifecycle latency at concurrency 1", "latency_ms", " ms", "<= 1.05")
    line("client CPU per lifecycle", "cpu_us_per_lifecycle", " us", "none")
    line("lifecycles/s at concurrency 16", "rate_16", "", ">= 0.95")
    line("lifecycles/s at concurrency 64", "rate_64", "", ">= 0.95")
    line(
        "lifecycles/s at concurrency 16, seeds unbounded as the floor's",
        "rate_16_unbounded",
        "",
        ">= 0.95",
    )
    line(
        "lifecycles/s at concurrency 64, seeds unbounded as the floor's",
        "rate_64_unbounded",
        "",
        ">= 0.95",
    )
    cpu = figures["cpu_us_per_call"]
    print(
        f"{server}: client CPU per tool call: raw {cpu['raw']:.0f} us, TaskSession "
        f"{cpu['ours']:.0f} us (paired {cpu['ours_ratio']:.3f}x), GymClient "
        f"{cpu['gym_client']:.0f} us (paired {cpu['gym_client_ratio']:.3f}x) (target <= 1.05)"
    )


async def trace() -> None:
    """The requests of one task at steady state, as the FastMCP gym logs them."""
    import threading

    import uvicorn
    from tests.gym.fastmcp_gym import RequestLog, build_fastmcp_gym

    log = RequestLog()
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(build_fastmcp_gym(log), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
        await asyncio.sleep(0.01)
    client = Ours(f"http://127.0.0.1:{port}", five_verifier_task(), read_demo_seed())
    await client.open()
    await client.lifecycle()
    print("first task (warm-up):", *log.entries, sep="\n  ")
    log.clear()
    await client.lifecycle()
    print("one task at steady state:", *log.entries, sep="\n  ")
    log.clear()
    await client.close()
    print("pool closed:", *log.entries, sep="\n  ")
    server.should_exit = True
    thread.join(timeout=10)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "serve-fastmcp":
        serve_fastmcp(int(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "trace":
        asyncio.run(trace())
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="local,fastmcp")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--sequential", type=int, default=8, help="lifecycles per latency round")
    parser.add_argument("--spread", type=int, default=96, help="lifecycles per throughput round")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--floor",
        choices=("aiohttp", "lean"),
        default="aiohttp",
        help="the floor paired with TaskSession: raw pooled aiohttp, or the same requests sent "
        "raw with LeanTransport (lifecycle_instructions.py's floor_lean)",
    )
    args = parser.parse_args()
    results = {}
    for server in args.servers.split(","):
        process, url = spawn(server)
        try:
            results[server] = asyncio.run(
                measure(url, args.rounds, args.sequential, args.spread, args.floor)
            )
        finally:
            process.terminate()
            process.wait(timeout=10)
        report(f"{server} (floor: {args.floor})", results[server])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
