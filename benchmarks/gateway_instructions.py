"""Instructions the gateway process runs per tool call and per MCP ping (valgrind callgrind).

``python benchmarks/gateway_instructions.py [--calls 320] [--keep DIR]`` (about a minute; needs valgrind)

A count of instructions does not move with the machine's load, as CPU seconds do:
the figure to compare two versions of the gateway's hot path by. The demo gym
runs in its own process, the gateway (``eog-core gateway``, so with the
collector settings of that command) under callgrind with instrumentation off
until the measured burst; this process is the agent (the lean client of
``gateway_vs_direct.py``), 16 rollouts with one worker each, as there. It prints
instructions per ``tools/call`` and per ``ping`` in the gateway process (user
space only: the kernel's share of a socket call is not counted).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=320, help="calls (and pings) measured")
    parser.add_argument(
        "--keep", type=Path, default=None, help="copy callgrind's dumps here (callgrind_annotate)"
    )
    args = parser.parse_args()
    per_worker = max(1, args.calls // WORKERS)
    gym, gym_url = spawn_gym()
    try:
        with tempfile.TemporaryDirectory() as out:
            paths, port = demo_paths(), _free_port()
            gateway = subprocess.Popen(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--instr-atstart=no",
                    f"--callgrind-out-file={out}/callgrind.%p",
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
                    f"{out}/records",
                    "--repeats",
                    str(WORKERS),
                    "--port",
                    str(port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                control = wait_for_port(gateway, port, timeout=180.0)
                asyncio.run(_drive(control, gateway.pid, per_worker))
            finally:
                gateway.terminate()
                gateway.wait(timeout=120)
            for number, name in enumerate(("tools/call", "ping"), start=1):
                count = _instructions(Path(out) / f"callgrind.{gateway.pid}.{number}")
                print(
                    f"gateway, {name} at c={WORKERS}: {count / (per_worker * WORKERS):,.0f} "
                    "instructions a request"
                )
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                for dump in Path(out).glob(f"callgrind.{gateway.pid}.*"):
                    shutil.copy(dump, args.keep / dump.name)
    finally:
        gym.terminate()
        gym.wait(timeout=30)


if __name__ == "__main__":
    main()
