"""Task-level gym SDK benchmarks against a LocalGym in its own process.

- Verifying a 5-verifier task over HTTP: ``TaskSession.verify`` against a
  pooled, concurrent raw-aiohttp floor and upstream's pattern (a new HTTP client
  per query, one query after another). Targets: within 1.5x of the floor,
  >= 30x faster than upstream's pattern.
- 1,000 open task sessions (two gyms each): client memory (tracemalloc) < 50 MB.

Run with ``nox -s bench`` or ``pytest benchmarks/bench_session.py``.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.gym.lifecycle_task import QUERIES, five_verifier_task  # noqa: E402

from eog_core import STRICT, Task, load_task  # noqa: E402
from eog_core.gym import GymDirectory, Janitor, TaskSession  # noqa: E402
from eog_core.local import DEMO_SERVER_NAME, demo_paths  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the gym process exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("the gym did not become healthy within 30 s")


def _spawn_gym() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, url


@pytest.fixture(scope="module")
def gym_url() -> Iterator[str]:
    process, url = _spawn_gym()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


class Rollout:
    """One seeded session on its own event loop, kept open across benchmark rounds."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.task = five_verifier_task()
        self.session: TaskSession = self.loop.run_until_complete(
            TaskSession.start(
                self.task,
                directory=GymDirectory({DEMO_SERVER_NAME: url}),
                seed_root=demo_paths().directory,
                janitor=Janitor(),
            )
        )
        self.url = url
        self.database_id = self.session.database_ids[DEMO_SERVER_NAME]

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.session.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def rollout(gym_url: str) -> Iterator[Rollout]:
    state = Rollout(gym_url)
    try:
        yield state
    finally:
        state.close()


def _body(database_id: str, query: str) -> tuple[dict[str, str], dict[str, str]]:
    return {"query": query, "database_id": database_id}, {"x-database-id": database_id}


def test_verify_five_over_http_ours(benchmark: BenchmarkFixture, rollout: Rollout) -> None:
    benchmark.group = "verify-5-over-http"
    verdict = benchmark(lambda: rollout.run(rollout.session.verify(policy=STRICT)))
    assert verdict.num_scored == 5 and verdict.evaluation_completed


def test_verify_five_over_http_raw_floor(benchmark: BenchmarkFixture, rollout: Rollout) -> None:
    """Pooled aiohttp, the 5 queries concurrently: the least any client can do."""
    benchmark.group = "verify-5-over-http"
    session = rollout.run(_make_session())

    async def floor() -> list[Any]:
        async def one(query: str) -> Any:
            body, headers = _body(rollout.database_id, query)
            async with session.post(
                f"{rollout.url}/api/sql-runner", json=body, headers=headers
            ) as answer:
                return await answer.json()

        return await asyncio.gather(*(one(q) for q in QUERIES))

    try:
        assert len(benchmark(lambda: rollout.run(floor()))) == 5
    finally:
        rollout.run(session.close())


async def _make_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession()


def test_verify_five_over_http_upstream_pattern(
    benchmark: BenchmarkFixture, rollout: Rollout
) -> None:
    """Upstream's pattern: a new httpx.AsyncClient per query, one query after another."""
    benchmark.group = "verify-5-over-http"

    async def upstream() -> list[Any]:
        answers = []
        for query in QUERIES:
            body, headers = _body(rollout.database_id, query)
            async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
                response = await client.post(
                    f"{rollout.url}/api/sql-runner", json=body, headers=headers
                )
                response.raise_for_status()
                answers.append({"success": True, "result": response.json()})
        return answers

    assert len(benchmark.pedantic(lambda: rollout.run(upstream()), rounds=10, iterations=1)) == 5


SEED = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');"


def two_gym_task(url_a: str, url_b: str) -> Task:
    return load_task(
        {
            "user_prompt": "u",
            "gym_servers_config": [
                {
                    "mcp_server_name": "gym-a",
                    "mcp_server_url": url_a,
                    "seed_database_file": "a.sql",
                },
                {
                    "mcp_server_name": "gym-b",
                    "mcp_server_url": url_b,
                    "seed_database_file": "b.sql",
                },
            ],
        }
    )


def test_thousand_open_sessions_memory(benchmark: BenchmarkFixture) -> None:
    """Client-side memory of 1,000 open task sessions with two gyms each (tracemalloc)."""
    benchmark.group = "sessions-memory"
    gyms = [_spawn_gym() for _ in range(2)]
    try:
        task = two_gym_task(gyms[0][1], gyms[1][1])
        figures: dict[str, float] = {}

        async def open_many(count: int) -> None:
            janitor = Janitor()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            started = time.perf_counter()
            sessions = []
            for batch in range(0, count, 50):
                sessions += await asyncio.gather(
                    *(
                        TaskSession.start(
                            task, seed_sql={"gym-a": SEED, "gym-b": SEED}, janitor=janitor
                        )
                        for _ in range(batch, min(count, batch + 50))
                    )
                )
            figures["open_s"] = time.perf_counter() - started
            figures["mb"] = (tracemalloc.get_traced_memory()[0] - base) / 2**20
            tracemalloc.stop()
            assert all(len(s.database_ids) == 2 for s in sessions)
            await asyncio.gather(*(s.aclose() for s in sessions))
            assert await janitor.aclose() == []

        benchmark.pedantic(lambda: asyncio.run(open_many(1000)), rounds=1, iterations=1)
        benchmark.extra_info.update(figures)
        print(
            f"\n1000 sessions x 2 gyms: {figures['mb']:.1f} MB client memory, opened in {figures['open_s']:.1f} s"
        )
        assert figures["mb"] < 50
    finally:
        for process, _ in gyms:
            process.terminate()
            process.wait(timeout=10)
