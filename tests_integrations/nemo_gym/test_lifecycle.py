"""The adapter's costs and lifecycle: gym requests per rollout (as ``eog-core run``), the
gym directory held from start-up to shutdown, no Ray, handoffs between event loops, and
session maps that do not grow with every rollout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from nemo_gym.base_resources_server import ResourcesSeedSessionRequest
from nemo_gym.episode_types import EpisodeId, TaskId

from eog_core import load_task
from eog_core.integrations.nemo_gym import EogResourcesServer
from eog_core.local import LocalGym
from tests_integrations._support import script
from tests_integrations.nemo_gym.stack import PATHS, RESPONSE, Stack, a_server, demo_row


def test_strict_and_parity_share_one_set_of_verifier_queries(stack: Stack) -> None:
    """/verify sends each distinct verifier query once for both verdicts (as ``eog-core
    run`` does; it used to verify twice: 12 SQL queries for the demo task instead of 6)."""
    queries = {v.validation_config.query for v in load_task(PATHS.task).verifiers}  # type: ignore[union-attr]
    before = stack.gym.request_counts.get("/api/sql-runner", 0)
    result = stack.run("solve")
    assert result["strict_success"] and result["parity_success"]
    assert (
        result["strict_verdict"]["num_scored"] == 6 and result["parity_verdict"]["num_scored"] == 5
    )
    assert stack.gym.request_counts["/api/sql-runner"] - before == len(queries)


def test_the_gym_pool_outlives_the_idle_moments_between_rollouts(stack: Stack) -> None:
    """The server holds its gym directory from first use: rollouts one after another
    (the server idle in between) reuse one MCP session, no handshake per rollout."""
    stack.run("solve")
    handshakes = stack.gym.method_counts.get("initialize", 0)
    for _ in range(3):
        stack.run("solve")
        assert len(stack.gym.session_ids()) >= 1  # held while no rollout is open
    assert stack.gym.method_counts.get("initialize", 0) == handshakes


def test_shutdown_deletes_open_rollouts_and_ends_the_shared_mcp_session(stack: Stack) -> None:
    """The lifespan holds the directory from start-up; shutdown closes what is open."""
    server = a_server(stack, "shutdown")
    row = demo_row(stack)
    sessions = set(stack.gym.session_ids())
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        step = script("solve")[0]
        assert (
            json.loads(client.post(f"/{step['name']}", json=step["arguments"]).text)["isError"]
            is False
        )
        assert len(stack.gym.database_ids()) == 1
    assert stack.gym.database_ids() == []  # the rollout left open was deleted at shutdown
    assert set(stack.gym.session_ids()) == sessions


def test_nemo_gym_starts_no_ray_cluster_for_the_server() -> None:
    """NeMo Gym 0.7 runs ``initialize_ray()`` for a server that does not declare
    ``ray_enabled`` (and warns that the default will change)."""
    from nemo_gym.server_utils import _server_uses_ray

    assert _server_uses_ray(EogResourcesServer) is False


def run_requests_per_rollout(gym: LocalGym, tmp_path: Path) -> float:
    """What ``eog-core run`` (the CLI, concurrency 4) sends the gym per rollout at steady
    state: two runs of 4 and 12 rollouts, so the one-time costs (handshake, tool
    listing, the shared session's end) cancel out."""
    import subprocess
    import sys

    totals = {}
    with subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-model", "--json", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    ) as model:
        try:
            assert model.stdout is not None
            base_url = json.loads(model.stdout.readline())["base_url"]
            for repeats in (4, 12):
                before = sum(gym.request_counts.values())
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "eog_core",
                        "run",
                        str(PATHS.task),
                        "--base-url",
                        base_url,
                        "--model",
                        "demo",
                        "--gym",
                        f"{gym.name}={gym.url}",
                        "--seed-root",
                        str(PATHS.directory),
                        "--repeats",
                        str(repeats),
                        "--concurrency",
                        "4",
                        "--out",
                        str(tmp_path / f"run{repeats}"),
                        "-q",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert done.returncode == 0, done.stderr
                totals[repeats] = sum(gym.request_counts.values()) - before
        finally:
            model.terminate()
    return (totals[12] - totals[4]) / 8


def test_the_adapter_sends_the_gym_what_eog_core_run_sends(stack: Stack, tmp_path: Path) -> None:
    """Gym requests per rollout through SimpleAgent at concurrency 4, steady state, counted
    by the gym: the useful ones (seed, each tool call, each distinct verifier query,
    delete), as many as ``eog-core run`` makes for the same task (17 for the demo)."""
    from concurrent.futures import ThreadPoolExecutor

    task = load_task(PATHS.task)
    useful = (
        1
        + len(script("solve"))
        + len(
            {
                v.validation_config.query  # type: ignore[union-attr]
                for v in task.verifiers
            }
        )
        + 1
    )
    assert run_requests_per_rollout(stack.gym, tmp_path) == useful
    stack.run("solve")  # warm
    before = sum(stack.gym.request_counts.values())
    rounds, concurrency = 3, 4
    with ThreadPoolExecutor(concurrency) as pool:
        for _ in range(rounds):
            results = list(pool.map(lambda _: stack.run("solve"), range(concurrency)))
            assert all(r["reward"] == 1.0 for r in results)
    assert sum(stack.gym.request_counts.values()) - before == rounds * concurrency * useful
    assert stack.gym.database_ids() == []


def hand_off_from_a_stopped_loop(stack: Stack) -> None:
    """Seed on one loop that then stops (and is closed without running again), go on and
    verify on another."""
    import asyncio

    import httpx

    server = a_server(stack, "handoff")
    app = server.setup_webserver()
    row = demo_row(stack)

    async def post(path: str, body: Any, cookies: httpx.Cookies | None = None) -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://eog", cookies=cookies
        ) as client:
            return await client.post(path, json=body)

    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        seeded = first.run_until_complete(post("/seed_session", row))  # then `first` stops
        assert seeded.status_code == 200, seeded.text
        step = script("solve")[0]
        called = second.run_until_complete(
            post(f"/{step['name']}", step["arguments"], seeded.cookies)
        )
        assert json.loads(called.text)["isError"] is False
        verified = second.run_until_complete(
            post("/verify", row | {"response": RESPONSE}, seeded.cookies)
        )
        assert verified.status_code == 200, verified.text
        assert stack.gym.database_ids() == []
        second.run_until_complete(server.aclose())
        second.run_until_complete(second.shutdown_asyncgens())
    finally:
        first.close()  # never run again: its pool is left to the garbage collector
        second.close()


def test_a_handoff_from_a_loop_that_stopped_detaches_the_old_session(stack: Stack) -> None:
    """The old session is detached at once, not by a coroutine scheduled on a loop that
    never runs again (the session was left registered and the coroutine never awaited)."""
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hand_off_from_a_stopped_loop(stack)
        gc.collect()  # the closed loop's leftovers (its unclosed pool warns: expected here)
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_a_session_the_janitor_closed_is_forgotten(stack: Stack) -> None:
    """A rollout left idle past ``session_ttl_seconds`` is closed by the janitor; the server
    then forgets it and answers its calls with one clear 409 (it kept the rollout forever,
    and a tool call on it raised ClosedError)."""
    import time

    server = a_server(stack, "ttl", session_ttl_seconds=0.05)
    row = demo_row(stack)
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        deadline = time.monotonic() + 30
        while stack.gym.database_ids() and time.monotonic() < deadline:
            time.sleep(0.01)  # the janitor reaps within its interval (1 s)
        assert stack.gym.database_ids() == []
        step = script("solve")[0]
        called = client.post(f"/{step['name']}", json=step["arguments"])
        assert called.status_code == 409 and "idle" in called.text, called.text
        assert server._rollouts == {}


def test_the_closed_sessions_remembered_are_bounded(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closed keys (never seeded again) and verify answers (for retries) are kept for the
    newest sessions only: the server's maps do not grow with every rollout."""
    from eog_core.integrations.nemo_gym import _server as adapter

    monkeypatch.setattr(adapter, "_FINISHED_KEPT", 2)
    server = a_server(stack, "bounded")
    row = demo_row(stack)
    with TestClient(server.setup_webserver()) as client:
        for index in range(4):
            closed = client.post(
                "/close_session",
                json={"resources_session_id": f"k{index}", "episode_id": {"rollout_id": "r"}},
            )
            assert closed.status_code == 200
        seed = ResourcesSeedSessionRequest(
            resources_session_id="k3",
            episode_id=EpisodeId(rollout_id="r"),
            task_id=TaskId(taskset="eog", task_id="t"),
            task_data=row,
        )
        refused = client.post("/seed_session", json=seed.model_dump(mode="json"))
        assert refused.status_code == 409 and "was closed" in refused.text
    assert list(server._finished) == ["k2", "k3"]
