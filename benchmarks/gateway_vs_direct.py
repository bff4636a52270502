"""A tool call through the MCP gateway against a direct ``TaskSession.call_tool``, side by side.

``python benchmarks/gateway_vs_direct.py [--rounds 6] [--calls 200] [--idle 1000]``

The demo gym (``eog-core serve-local``) and the gateway (``eog-core gateway``)
each run in their own process, as an agent harness would use them; this
process is the agent. Each round runs both paths back to back (order
alternating), so a pair shares the machine's load:

- ``direct``: ``TaskSession.call_tool`` on a session seeded in this process (its default
  transport, pooled aiohttp; ``--direct-transport lean``: ``LeanTransport``, as the
  gateway's own sessions send);
- ``gateway``: the same call as MCP ``tools/call`` over pooled aiohttp to the
  rollout's gateway endpoint (a lean client, so the figure is the gateway's
  cost, not an SDK's), which routes it through its own ``TaskSession``.

It prints the median latency at concurrency 1 and calls per second at
concurrency 16 (16 rollouts, one worker each) for both, with the differences and
ratios per round; then the gateway's resident memory before and after holding
``--idle`` rollouts open at once (seeded, one MCP session each, no calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gym_client import wait_for_port  # noqa: E402
from eog_core import load_task  # noqa: E402
from eog_core.gym import GymDirectory, Janitor, LeanTransport, TaskSession  # noqa: E402
from eog_core.local import DEMO_SERVER_NAME, demo_paths  # noqa: E402

ACCEPT = "application/json, text/event-stream"
TOOL = ("find_account", {"name": "Harbor Lane"})
Call = Callable[[], Awaitable[None]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn_gym() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, wait_for_port(process, port)


def spawn_gateway(gym_url: str, out: Path, repeats: int) -> tuple[subprocess.Popen[bytes], str]:
    paths = demo_paths()
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "eog_core",
            "gateway",
            str(paths.task),
            "--gym",
            f"{DEMO_SERVER_NAME}={gym_url}",
            "--seed-root",
            str(paths.directory),
            "--out",
            str(out),
            "--repeats",
            str(repeats),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, wait_for_port(process, port)


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU time of a process (this one when ``pid`` is None)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class GatewayAgent:
    """A lean MCP client on one gateway rollout (pooled aiohttp, JSON answers)."""

    def __init__(self, http: aiohttp.ClientSession, control: str) -> None:
        self.http, self.control = http, control
        self.url = ""
        self.rollout_id = ""
        self.headers: dict[str, str] = {}
        self.ids = 0

    async def open(self, *, initialize: bool = True) -> None:
        async with self.http.post(f"{self.control}/rollouts", json={}) as response:
            assert response.status == 201, await response.text()
            rollout = await response.json()
        self.url, self.rollout_id = rollout["mcp_url"], rollout["rollout_id"]
        if not initialize:
            return
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
        async with self.http.post(self.url, json=init, headers={"Accept": ACCEPT}) as response:
            await response.read()
            self.headers = {
                "Accept": ACCEPT,
                "mcp-session-id": response.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-06-18",
            }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with self.http.post(self.url, json=note, headers=self.headers) as response:
            await response.read()

    async def call(self) -> None:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": TOOL[0], "arguments": TOOL[1]},
        }
        async with self.http.post(
            self.url, data=json.dumps(body), headers=self.headers
        ) as response:
            answer = json.loads(await response.read())
        assert answer["result"]["isError"] is False, answer

    async def ping(self) -> None:
        """An MCP ``ping``: the gateway's cost of serving a request that reaches no gym."""
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "ping"}
        async with self.http.post(
            self.url, data=json.dumps(body), headers=self.headers
        ) as response:
            answer = json.loads(await response.read())
        assert answer["result"] == {}, answer

    async def abandon(self) -> None:
        async with self.http.delete(f"{self.control}/rollouts/{self.rollout_id}") as response:
            await response.read()


async def _latencies(call: Call, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return times


async def _throughput(calls: list[Call], total: int) -> float:
    per_worker = total // len(calls)

    async def worker(call: Call) -> None:
        for _ in range(per_worker):
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in calls))
    return per_worker * len(calls) / (time.perf_counter() - started)


async def measure(
    gym_url: str,
    control: str,
    rounds: int,
    calls: int,
    pids: dict[str, int],
    direct_transport: str = "aiohttp",
) -> dict[str, Any]:
    task = load_task(demo_paths().task)
    directory = GymDirectory({DEMO_SERVER_NAME: gym_url})
    janitor = Janitor()
    transport = LeanTransport() if direct_transport == "lean" else None
    rows: list[dict[str, float]] = []
    async with (
        directory,
        janitor,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        sessions = [
            await TaskSession.start(
                task,
                directory=directory,
                seed_root=demo_paths().directory,
                janitor=janitor,
                transport=transport,
            )
            for _ in range(16)
        ]
        agents = [GatewayAgent(http, control) for _ in range(16)]
        for agent in agents:
            await agent.open()

        def direct(session: TaskSession) -> Call:
            async def call() -> None:
                result = await session.call_tool(*TOOL)
                assert not result.is_error, result.text
                session.trajectory.clear()  # a long benchmark, not a rollout

            return call

        for agent in agents:  # warm both paths (connections, caches)
            await agent.call()
        for session in sessions:
            await direct(session)()
        for number in range(rounds):
            if number:  # fresh rollouts each round: a rollout's transcript stays rollout-sized
                for agent in agents:
                    await agent.abandon()
                    await agent.open()
                    await agent.call()
            row: dict[str, float] = {}
            order = ["direct", "gateway"] if number % 2 == 0 else ["gateway", "direct"]
            for name in order:
                one = direct(sessions[0]) if name == "direct" else agents[0].call
                row[f"{name}_ms"] = statistics.median(await _latencies(one, calls)) * 1000
            for name in order:
                many = (
                    [direct(s) for s in sessions] if name == "direct" else [a.call for a in agents]
                )
                before = {k: cpu_seconds(p) for k, p in pids.items()} | {"agent": cpu_seconds()}
                row[f"{name}_per_s"] = await _throughput(many, calls * 4)
                spent = {k: cpu_seconds(p) for k, p in pids.items()} | {"agent": cpu_seconds()}
                done = calls * 4
                for process, seconds in spent.items():
                    if name == "direct" and process == "gateway":
                        continue
                    row[f"{name}_cpu_us_{process}"] = (seconds - before[process]) / done * 1e6
            rows.append(row)
            print(
                f"round {number + 1}: c=1 direct {row['direct_ms']:.3f} ms gateway "
                f"{row['gateway_ms']:.3f} ms (+{row['gateway_ms'] - row['direct_ms']:.3f}); c=16 "
                f"direct {row['direct_per_s']:.0f}/s gateway {row['gateway_per_s']:.0f}/s "
                f"({row['gateway_per_s'] / row['direct_per_s']:.2f}x)",
                flush=True,
            )
        before = cpu_seconds(pids["gateway"])
        await _throughput([a.ping for a in agents], calls * 4)
        ping_us = (cpu_seconds(pids["gateway"]) - before) / (calls * 4) * 1e6
        print(f"CPU per MCP ping at c=16 (no gym call), gateway: {ping_us:.0f} us")
        for session in sessions:
            await session.aclose()
        for agent in agents:
            await agent.abandon()
    if transport is not None:
        await transport.aclose()
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    for name in ("direct", "gateway"):
        parts = {k.rsplit("_", 1)[1]: v for k, v in med.items() if k.startswith(f"{name}_cpu_us_")}
        print(
            f"CPU per call at c=16, {name}: "
            + ", ".join(f"{k} {v:.0f} us" for k, v in parts.items())
            + f", total {sum(parts.values()):.0f} us"
        )
    return {
        **med,
        "extra_ms": statistics.median(r["gateway_ms"] - r["direct_ms"] for r in rows),
        "ratio": statistics.median(r["gateway_per_s"] / r["direct_per_s"] for r in rows),
    }


async def idle_memory(control: str, pid: int, count: int) -> dict[str, float]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as http:
        warm = GatewayAgent(http, control)  # one rollout opened and ended: every module loaded
        await warm.open()
        await warm.call()
        await warm.abandon()
        before = rss_mb(pid)
        agents = [GatewayAgent(http, control) for _ in range(count)]
        started = time.perf_counter()
        for offset in range(0, count, 16):
            await asyncio.gather(*(a.open() for a in agents[offset : offset + 16]))
        opened = time.perf_counter() - started
        async with http.get(f"{control}/rollouts") as response:
            listed = len((await response.json())["rollouts"])
        after = rss_mb(pid)
        for offset in range(0, count, 32):
            await asyncio.gather(*(a.abandon() for a in agents[offset : offset + 32]))
    return {
        "rollouts": listed,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "delta_mb": after - before,
        "open_seconds": opened,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200, help="calls per latency sample")
    parser.add_argument(
        "--idle", type=int, default=1000, help="idle rollouts held for the memory figure"
    )
    parser.add_argument(
        "--direct-transport",
        choices=("aiohttp", "lean"),
        default="aiohttp",
        help="what the direct sessions send with: TaskSession's default (the "
        "issue's comparison) or LeanTransport, the gateway's own",
    )
    args = parser.parse_args()
    gym, gym_url = spawn_gym()
    processes = [gym]
    try:
        with tempfile.TemporaryDirectory() as out:
            gateway, control = spawn_gateway(
                gym_url, Path(out) / "calls", repeats=16 * (args.rounds + 1)
            )
            processes.append(gateway)
            figures = asyncio.run(
                measure(
                    gym_url,
                    control,
                    args.rounds,
                    args.calls,
                    {"gym": gym.pid, "gateway": gateway.pid},
                    args.direct_transport,
                )
            )
            print(
                f"\nmedian over {args.rounds} rounds: c=1 direct {figures['direct_ms']:.3f} ms, "
                f"gateway {figures['gateway_ms']:.3f} ms, extra {figures['extra_ms']:+.3f} ms "
                f"(target <= +1 ms); c=16 direct {figures['direct_per_s']:.0f}/s, gateway "
                f"{figures['gateway_per_s']:.0f}/s, ratio {figures['ratio']:.2f}x (target >= 0.5x)"
            )
            if args.idle:  # a fresh gateway: the first one's heap holds the calls' records
                gateway, control = spawn_gateway(gym_url, Path(out) / "idle", repeats=args.idle + 1)
                processes.append(gateway)
                memory = asyncio.run(idle_memory(control, gateway.pid, args.idle))
                print(
                    f"{memory['rollouts']:.0f} idle rollouts: gateway RSS {memory['rss_before_mb']:.1f}"
                    f" -> {memory['rss_after_mb']:.1f} MB (+{memory['delta_mb']:.1f} MB; target "
                    f"< 100 MB), opened in {memory['open_seconds']:.1f} s"
                )
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
