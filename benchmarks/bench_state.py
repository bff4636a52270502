"""State capture on the demo task against a LocalGym in its own process (docs/state.md).

- One snapshot of the demo database (every table through ``/api/sql-runner``):
  its time, its canonical bytes and its gzip bytes (``extra_info``).
- A whole demo lifecycle (seed, the correct trajectory, strict verify, delete)
  without capture and with the two snapshots ``--capture-state`` takes, side by
  side in one group: what capture adds to a lifecycle.

Run with ``nox -s bench -- -k state`` or ``pytest benchmarks/bench_state.py``.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from eog_core import STRICT, load_task
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.local import DEMO_SERVER_NAME, demo_paths, load_demo_trajectory
from eog_core.state import snapshot


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def gym_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the gym did not become healthy") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


def _start(url: str, janitor: Janitor) -> Any:
    return TaskSession.start(
        load_task(demo_paths().task),
        directory=GymDirectory({DEMO_SERVER_NAME: url}),
        seed_root=demo_paths().directory,
        janitor=janitor,
    )


def test_state_snapshot_of_the_demo_database(
    benchmark: BenchmarkFixture, gym_url: str, loop: asyncio.AbstractEventLoop
) -> None:
    benchmark.group = "state-snapshot"
    janitor = Janitor()
    session = loop.run_until_complete(_start(gym_url, janitor))
    try:
        state = benchmark(lambda: loop.run_until_complete(snapshot(session)))
    finally:
        loop.run_until_complete(session.aclose())
    tables = state.document["gyms"][DEMO_SERVER_NAME]["tables"]
    benchmark.extra_info.update(
        tables=len(tables),
        rows=sum(len(t["rows"]) for t in tables.values()),
        canonical_bytes=state.size,
        gzip_bytes=len(gzip.compress(state.data, compresslevel=6, mtime=0)),
    )


@pytest.mark.parametrize("captured", [False, True], ids=["plain", "captured"])
def test_state_demo_lifecycle(
    benchmark: BenchmarkFixture, gym_url: str, loop: asyncio.AbstractEventLoop, captured: bool
) -> None:
    """Seed, the correct trajectory, strict verify, delete; with capture, a snapshot after
    seeding and one before deletion (as ``run --capture-state`` takes them)."""
    benchmark.group = "state-lifecycle"
    janitor = Janitor()
    steps = [(s["name"], s["arguments"]) for s in load_demo_trajectory()]

    async def lifecycle() -> bool:
        async with _start(gym_url, janitor) as session:
            if captured:
                await snapshot(session)
            for name, arguments in steps:
                await session.call_tool(name, arguments)
            verdict = await session.verify(policy=STRICT)
            if captured:
                await snapshot(session)
        return verdict.success

    assert benchmark(lambda: loop.run_until_complete(lifecycle()))
