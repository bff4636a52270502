"""Instructions the gateway process runs per tool call and per MCP ping (valgrind callgrind).

``python benchmarks/gateway_instructions.py [--calls 320] [--kinds gateway,floor] [--keep DIR]``
(about a minute a kind; needs valgrind)

A count of instructions does not move with the machine's load, as CPU seconds do:
the figure to compare two versions of the gateway's hot path by. The demo gym
runs in its own process, the gateway (``eog-core gateway``, so with the
collector settings of that command) under callgrind with instrumentation off
until the measured burst; this process is the agent (the lean client of
``gateway_vs_direct.py``), 16 rollouts with one worker each, as there. It prints
instructions per ``tools/call`` and per ``ping`` in the gateway process (user
space only: the kernel's share of a socket call is not counted).

``--kinds`` names the processes measured in turn, each in its own process on the
same gym, under callgrind the same way, driven by the same agents with the same
requests: ``gateway`` (the default) and the floors, the minimal proxy of
``gateway_floor.py``: the least a gateway built on the same parts
(``eog_core._http1``'s llhttp reader, stdlib ``json``, ``LeanTransport``) runs per
request. ``floor`` sends with ``LeanTransport`` itself and writes one JSON line a
call; ``-gymclient`` sends through ``GymClient(share_mcp=True)`` instead;
``-deferred`` keeps the calls in memory and writes their lines when the rollout
ends, as the gateway does (``floor-deferred``, ``floor-gymclient``,
``floor-gymclient-deferred``). ``--floor`` is ``--kinds gateway,floor``. With a
floor measured, the ratios gateway/floor are printed too: how far the gateway is
above what its parts cost.

The warm-up ends with one round of all agents at once, so each process measured
holds its connections to the gym when the burst starts (with a warm-up one agent at
a time, as before 2026-12-06, the burst opened them inside the measured window:
at ``--calls 320`` about 27k instructions a call, for the gateway and the floors
alike, more at fewer calls).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gym_client import wait_for_port  # noqa: E402
from eog_core.local import DEMO_SERVER_NAME, demo_paths  # noqa: E402
from gateway_vs_direct import GatewayAgent, _free_port, spawn_gym  # noqa: E402

WORKERS = 16


def _control(*arguments: str) -> None:
    subprocess.run(["callgrind_control", *arguments], check=True, stdout=subprocess.DEVNULL)


def _instructions(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"{path}: no totals line")


async def _drive(control: str, pid: int, per_worker: int) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        agents = [GatewayAgent(http, control) for _ in range(WORKERS)]
        for agent in agents:
            await agent.open()
        for _ in range(3):  # warm: connections, caches, first-call paths
            for agent in agents:
                await agent.call()
                await agent.ping()
        await asyncio.gather(
            *(agent.call() for agent in agents)
        )  # the gym connections the burst uses
        for name in ("call", "ping"):
            _control("-i", "on", str(pid))

            async def worker(agent: GatewayAgent, name: str = name) -> None:
                for _ in range(per_worker):
                    await getattr(agent, name)()

            await asyncio.gather(*(worker(a) for a in agents))
            _control("-i", "off", str(pid))
            _control("-d", name, str(pid))
        for agent in agents:
            await agent.abandon()


KINDS = ("gateway", "floor", "floor-deferred", "floor-gymclient", "floor-gymclient-deferred")


def _command(kind: str, gym_url: str, out: str, port: int) -> list[str]:
    """The command line of the process measured (``kind``), serving on ``port``."""
    if kind == "gateway":
        paths = demo_paths()
        return [
            *("-m", "eog_core", "gateway", str(paths.task)),
            *("--gym", f"{DEMO_SERVER_NAME}={gym_url}", "--seed-root", str(paths.directory)),
            *("--out", f"{out}/records", "--repeats", str(WORKERS), "--port", str(port)),
        ]
    return [
        str(ROOT / "benchmarks" / "gateway_floor.py"),
        *("--gym", gym_url, "--port", str(port), "--records", f"{out}/records"),
        *("--client", "gymclient" if "gymclient" in kind else "raw"),
        *(["--defer-records"] if kind.endswith("-deferred") else []),
    ]


def _measure(kind: str, gym_url: str, per_worker: int, keep: Path | None) -> tuple[float, float]:
    """Instructions per ``tools/call`` and per ``ping`` in the process ``kind``."""
    with tempfile.TemporaryDirectory() as out:
        port = _free_port()
        process = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}/callgrind.%p",
                sys.executable,
                *_command(kind, gym_url, out, port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            control = wait_for_port(process, port, timeout=180.0)
            asyncio.run(_drive(control, process.pid, per_worker))
        finally:
            process.terminate()
            process.wait(timeout=120)
        figures = tuple(
            _instructions(Path(out) / f"callgrind.{process.pid}.{number}") / (per_worker * WORKERS)
            for number in (1, 2)
        )
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for dump in Path(out).glob(f"callgrind.{process.pid}.*"):
                shutil.copy(dump, keep / f"{kind}.{dump.name}")
    return figures[0], figures[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=320, help="calls (and pings) measured")
    parser.add_argument(
        "--kinds",
        default="gateway",
        help=f"the processes measured, in turn, comma-separated: {', '.join(KINDS)}",
    )
    parser.add_argument("--floor", action="store_true", help="the same as --kinds gateway,floor")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="copy callgrind's dumps here, as KIND.callgrind.PID.N (callgrind_annotate)",
    )
    args = parser.parse_args()
    kinds = ["gateway", "floor"] if args.floor else args.kinds.split(",")
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))} (known: {', '.join(KINDS)})")
    per_worker = max(1, args.calls // WORKERS)
    gym, gym_url = spawn_gym()
    figures: dict[str, tuple[float, float]] = {}
    try:
        for kind in kinds:
            figures[kind] = _measure(kind, gym_url, per_worker, args.keep)
            for name, count in zip(("tools/call", "ping"), figures[kind], strict=True):
                print(f"{kind}, {name} at c={WORKERS}: {count:,.0f} instructions a request")
    finally:
        gym.terminate()
        gym.wait(timeout=30)
    if "gateway" in figures:
        for kind in kinds:
            if kind != "gateway":
                call, ping = (g / f for g, f in zip(figures["gateway"], figures[kind], strict=True))
                print(f"gateway/{kind}: tools/call {call:.2f}x, ping {ping:.2f}x")


if __name__ == "__main__":
    main()
