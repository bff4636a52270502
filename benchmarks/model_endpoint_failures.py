"""How long ``eog-core run`` takes to report a dead, hung or refusing model endpoint (#17).

Each case runs the real command line on the demo task against the embedded gym and a
loopback endpoint that fails in one way, with the default settings (``--idle-timeout
120``, ``--unreachable-after 60``, ``--stop-after-unreachable 3``, 8 request retries, 2
rollout retries), and prints the wall time to the exit and its code::

    python benchmarks/model_endpoint_failures.py            # every case (about 5 minutes)
    python benchmarks/model_endpoint_failures.py dead wrong-key

At start (the preflight): nothing listening, a refused key, an unknown model, a server that
accepts connections and never answers. Mid-run (the preflight passed, then the endpoint
went away): nothing listening any more, or hung with its socket open.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

from eog_core.local import LocalGym, ScriptedModel, demo_paths


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def silent_server() -> tuple[asyncio.Server, str]:
    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


async def run_cli(
    gym: LocalGym,
    base_url: str,
    *extra: str,
    env: dict[str, str] | None = None,
    model: str = "demo",
    out: str | None = None,
) -> tuple[float, int, str]:
    paths = demo_paths()
    with tempfile.TemporaryDirectory() as scratch:
        argv = [
            sys.executable,
            "-m",
            "eog_core",
            "run",
            str(paths.task),
            "--seed-root",
            str(paths.directory),
            "--gym",
            f"{gym.name}={gym.url}",
            "--base-url",
            base_url,
            "--model",
            model,
            "--repeats",
            "100",
            "--concurrency",
            "2",
            "--out",
            out or scratch,
            *extra,
        ]
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        _, err = await process.communicate()
        lines = [line for line in err.decode().splitlines() if line.startswith("eog-core")]
        return time.monotonic() - started, process.returncode or 0, (lines or [""])[-1][:160]


async def mid_run(gym: LocalGym, hang: bool) -> tuple[float, int, str]:
    """The endpoint answers the preflight, then stops: its port closed, or its process stopped
    with the socket open (every answer withheld, GET /models too)."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        "serve-model",
        "--port",
        str(port),
        "--json",
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdout is not None
    announced = json.loads(await server.stdout.readline())
    out = Path(tempfile.mkdtemp())
    task = asyncio.create_task(run_cli(gym, announced["base_url"], out=str(out)))
    rollouts = out / "rollouts.jsonl"
    # polling a file another process writes
    while not (rollouts.exists() and rollouts.read_bytes().count(b"\n")):  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    if hang:
        os.kill(server.pid, signal.SIGSTOP)
    else:
        server.kill()
    try:
        return await task
    finally:
        if hang:
            os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        shutil.rmtree(out, ignore_errors=True)


async def main(names: list[str]) -> None:
    async with LocalGym.demo() as gym, ScriptedModel(api_key="right") as model:
        silent, silent_url = await silent_server()
        cases = {
            "dead": lambda: run_cli(gym, f"http://127.0.0.1:{free_port()}/v1"),
            "wrong-key": lambda: run_cli(
                gym,
                model.base_url,
                "--api-key-env",
                "EOG_BENCH_KEY",
                env={**os.environ, "EOG_BENCH_KEY": "nope"},
            ),
            "unknown-model": lambda: run_cli(
                gym,
                model.base_url,
                "--api-key-env",
                "EOG_BENCH_KEY",
                env={**os.environ, "EOG_BENCH_KEY": "right"},
                model="gpt-9",
            ),
            "hung": lambda: run_cli(gym, silent_url),
            "dead-mid-run": lambda: mid_run(gym, hang=False),
            "hung-mid-run": lambda: mid_run(gym, hang=True),
        }
        print(f"{'case':<15} {'seconds':>8} {'exit':>5}  last line")
        for name in names or list(cases):
            seconds, code, line = await cases[name]()
            print(f"{name:<15} {seconds:>8.1f} {code:>5}  {line}", flush=True)
        silent.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
