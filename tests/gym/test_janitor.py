"""The janitor: authenticated retries, a loop that stops, seeds in flight, no kept event loops."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import subprocess
import sys
import weakref
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from aiohttp import web

from eog_core import EogError, load_task
from eog_core.gym import GymClient, GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.local import DEMO_SERVER_NAME, LocalGym, demo_paths
from eog_core.tasks import AuthConfig, task_from_mapping

SECRET = "s3cret-token"


@pytest.fixture
async def guarded_gym() -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """A REST gym whose deletions need the bearer token; the first one fails with 500."""
    state: dict[str, Any] = {"databases": {"db_1"}, "fail": 1, "auth_seen": []}

    async def delete(request: web.Request) -> web.Response:
        state["auth_seen"].append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            return web.json_response({"detail": "unauthorized"}, status=401)
        if state["fail"]:
            state["fail"] -= 1
            return web.json_response({"detail": "busy"}, status=500)
        state["databases"].discard((await request.json())["database_id"])
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_delete("/api/delete-database", delete)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", state
    finally:
        await runner.cleanup()


async def test_retries_authenticate_like_the_session(
    guarded_gym: tuple[str, dict[str, Any]],
) -> None:
    url, state = guarded_gym
    janitor = Janitor(base_delay=0.0)
    janitor.adopt(
        gym="g",
        url=url,
        database_id="db_1",
        error="HTTP 500",
        auth=AuthConfig(type="bearer", token=SECRET),
    )
    assert SECRET not in repr(janitor.leaked())
    assert await janitor.aclose() == [] or state["fail"] == 0
    while janitor.leaked():
        await janitor.sweep(force=True)
    assert state["databases"] == set()
    assert set(state["auth_seen"]) == {f"Bearer {SECRET}"}


def janitor_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "eog-core-janitor" and not t.done()]


async def test_aclose_does_not_restart_the_loop() -> None:
    janitor = Janitor(base_delay=0.0)
    janitor.adopt(gym="g", url="http://127.0.0.1:9", database_id="db_dead")  # nothing listens
    assert janitor_tasks()
    left = await janitor.aclose()
    assert [e.database_id for e in left] == ["db_dead"]
    assert janitor_tasks() == []


async def test_a_seed_slower_than_cleanup_is_deleted_after_it_lands() -> None:
    task = load_task(demo_paths().task)
    janitor = Janitor(base_delay=0.0, interval=0.05)
    async with LocalGym.demo() as gym:
        gym.set_latency(0.5)
        starting = asyncio.ensure_future(
            TaskSession.start(
                task,
                directory=GymDirectory({gym.name: gym.url}),
                seed_root=demo_paths().directory,
                janitor=janitor,
                timeouts=Timeouts(admin=0.05),
            )
        )
        async with asyncio.timeout(5):
            while not gym.request_counts.get("/api/seed-database"):  # noqa: ASYNC110 - bounded
                await asyncio.sleep(0.005)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        (entry,) = janitor.leaked()
        assert entry.last_error == "seed still in flight"
        gym.set_latency(0.0)
        async with asyncio.timeout(10):
            while janitor.leaked() or gym.database_ids():  # noqa: ASYNC110 - bounded
                await asyncio.sleep(0.02)
        assert await janitor.aclose() == []


@pytest.mark.parametrize("given", ["a directory", "the default directory"])
def test_default_janitors_do_not_keep_event_loops_alive(given: str) -> None:
    """Three asyncio.run rollouts against a gym in another process leave no loop behind
    (neither the default janitor nor the directory, default or not, holds one)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    task = load_task(demo_paths().task)
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one_rollout() -> None:
        async with asyncio.timeout(30):
            while True:  # wait for the server to answer
                try:
                    async with GymClient(url) as client:
                        if await client.health():
                            break
                except EogError:
                    pass
                await asyncio.sleep(0.05)
        loops.append(weakref.ref(asyncio.get_running_loop()))
        directory = (
            None if given == "the default directory" else GymDirectory({DEMO_SERVER_NAME: url})
        )
        task_here = attrs.evolve(
            task, gym_servers=tuple(attrs.evolve(g, url=url) for g in task.gym_servers)
        )
        async with TaskSession.start(
            task_here, directory=directory, seed_root=demo_paths().directory
        ):
            pass

    try:
        for _ in range(3):
            asyncio.run(one_rollout())
    finally:
        server.terminate()
        server.wait(timeout=10)
    gc.collect()
    # This test's own loops (other tests' loops may still be referenced by their fixtures).
    assert [ref() for ref in loops] == [None, None, None]


async def test_concurrent_acquires_respect_the_cap_while_probing() -> None:
    now = [0.0]
    async with LocalGym.demo() as gym:
        directory = GymDirectory(
            {gym.name: gym.url}, max_lifecycles=1, probe_after=0.0, clock=lambda: now[0]
        )
        (replica,) = directory.gyms()[gym.name]
        directory.mark_down(_lease(gym))
        results = await asyncio.gather(
            *(directory.acquire(gym.name) for _ in range(5)), return_exceptions=True
        )
    leases = [r for r in results if not isinstance(r, BaseException)]
    assert len(leases) == 1
    assert directory.gyms()[gym.name][0].lifecycles == 1
    assert replica.lifecycles == 0  # gyms() hands out copies


def _lease(gym: LocalGym) -> Any:
    from eog_core.gym import Lease

    return Lease(gym=gym.name, url=gym.url)


def test_task_file_with_auth_reaches_the_janitor_redacted() -> None:
    raw = json.loads(demo_paths().task.read_text())
    raw["gym_servers_config"][0]["auth_config"] = {"type": "bearer", "token": SECRET}
    task = task_from_mapping(raw)
    assert task.gym_servers[0].auth == AuthConfig(type="bearer", token=SECRET)
    assert SECRET not in repr(task) and SECRET not in str(task.gym_servers[0].auth)
