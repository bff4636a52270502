"""EogResourcesServer under NeMo Gym's own SimpleAgent, end to end on loopback.

Three real servers: the agent (``responses_api_agents.simple_agent``), our
resources server, and a replaying Responses-API model server; plus LocalGym.
``POST /run`` on the agent seeds, loops model -> tool -> model, verifies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from nemo_gym.base_resources_server import ResourcesSeedSessionRequest
from nemo_gym.config_types import BaseServerConfig, ModelServerRef, ResourcesServerRef
from nemo_gym.episode_types import EpisodeId, TaskId
from nemo_gym.server_utils import ServerClient
from nemo_gym.testing.session_conformance import check_resources_session_contract
from omegaconf import OmegaConf
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig

from eog_core import load_task, to_nemo_row
from eog_core.integrations.nemo_gym import (
    EogResourcesServer,
    EogResourcesServerConfig,
    aggregate_rollouts,
)
from eog_core.local import LocalGym, demo_paths, demo_tool_snapshot
from tests_integrations._support import (
    FINAL_TEXT,
    arguments_text,
    doc_examples,
    free_port,
    run_example,
    script,
    serve_asgi,
)

PATHS = demo_paths()


class ReplayModel:
    """A Responses-API model server that replays a script and records what it was sent."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/responses")(self.responses)

    async def responses(self, request: Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append(body)
        done = sum(1 for item in body["input"] if item.get("type") == "function_call_output")
        if done < len(self.steps):
            step = self.steps[done]
            output: list[dict[str, Any]] = [{
                "type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}",
                "name": step["name"], "arguments": arguments_text(step), "status": "completed"}]
        else:
            output = [{"type": "message", "id": "msg_final", "role": "assistant",
                       "status": "completed",
                       "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}]
        return {"id": f"resp_{len(self.requests)}", "object": "response", "created_at": 0,
                "model": "replay", "output": output, "parallel_tool_calls": False,
                "tool_choice": "auto", "tools": []}

    def observations(self) -> list[str]:
        last = self.requests[-1]["input"]
        return [item["output"] for item in last if item.get("type") == "function_call_output"]


class Stack:
    def __init__(self, gym: LocalGym, model: ReplayModel, agent_url: str,
                 resources: EogResourcesServer) -> None:
        self.gym, self.model, self.agent_url, self.resources = gym, model, agent_url, resources

    def run(self, kind: str, **row_overrides: Any) -> dict[str, Any]:
        self.model.steps = script(kind)
        task = load_task(PATHS.task)
        row = to_nemo_row(task, {self.gym.name: demo_tool_snapshot()}) | row_overrides
        answer = requests.post(f"{self.agent_url}/run", json=row, timeout=120)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    model = ReplayModel()
    ports = {"model": free_port(), "eog": free_port(), "agent": free_port()}
    with LocalGym.demo().run_in_thread() as gym:
        config = OmegaConf.create({
            "model": {"responses_api_models": {"replay": {"host": "127.0.0.1", "port": ports["model"]}}},
            "eog": {"resources_servers": {"eog": {"host": "127.0.0.1", "port": ports["eog"]}}},
            "agent": {"responses_api_agents": {"simple_agent": {"host": "127.0.0.1", "port": ports["agent"]}}},
        })
        client = ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=free_port()),
                              global_config_dict=config)
        # How NeMo Gym hands a spawned server its config (its HTTP client reads it).
        patch = pytest.MonkeyPatch()
        patch.setenv("NEMO_GYM_CONFIG_DICT", OmegaConf.to_yaml(config))
        resources = EogResourcesServer(
            config=EogResourcesServerConfig(
                host="127.0.0.1", port=ports["eog"], entrypoint="", name="eog",
                gym_url_pools={gym.name: [gym.url]}, seed_sql_root=str(PATHS.directory)),
            server_client=client)
        agent = SimpleAgent(
            config=SimpleAgentConfig(
                host="127.0.0.1", port=ports["agent"], entrypoint="", name="agent",
                model_server=ModelServerRef(type="responses_api_models", name="model"),
                resources_server=ResourcesServerRef(type="resources_servers", name="eog")),
            server_client=client)
        try:
            with serve_asgi((model.app, ports["model"]), (resources.setup_webserver(), ports["eog"]),
                            (agent.setup_webserver(), ports["agent"])) as urls:
                yield Stack(gym, model, urls[2], resources)
        finally:
            patch.undo()


def test_the_correct_trajectory_scores_one(stack: Stack) -> None:
    result = stack.run("solve")
    assert (result["reward"], result["success"], result["mask_sample"]) == (1.0, True, False)
    assert result["strict_success"] and result["parity_success"]
    assert result["verifier_pass_rate"] == 1.0 and result["failure_kind"] is None
    assert result["num_tool_calls"] == len(script("solve"))
    observations = stack.model.observations()
    assert len(observations) == len(script("solve"))
    assert all(json.loads(text)["isError"] is False for text in observations)
    assert stack.gym.database_ids() == []


def test_doing_nothing_scores_zero(stack: Stack) -> None:
    result = stack.run("idle")
    assert (result["reward"], result["success"], result["mask_sample"]) == (0.0, False, False)
    assert result["num_tool_calls"] == 0 and result["verifier_pass_rate"] < 1.0
    assert stack.gym.database_ids() == []


def test_a_gym_fault_reaches_the_model_as_a_tool_error_and_masks_the_sample(stack: Stack) -> None:
    stack.gym.drop_next(after_tool_call=True)
    result = stack.run("solve")
    first = json.loads(stack.model.observations()[0])
    assert first["isError"] is True and first["content"][0]["text"].startswith("Error: ")
    assert result["mask_sample"] is True
    assert result["failure_kind"] == "transport_peer_drop" and "failed on the gym" in result["failure_reason"]
    assert result["num_tool_errors"] == 1
    assert stack.gym.database_ids() == []


def test_aggregate_metrics_per_domain_and_pass_at_k(stack: Stack) -> None:
    rows = [stack.run("solve"), stack.run("idle")]
    answer = requests.post(f"{stack.agent_url}/aggregate_metrics",
                           json={"verify_responses": [r | {"_ng_task_index": 0, "_ng_rollout_index": i}
                                                      for i, r in enumerate(rows)]}, timeout=60)
    assert answer.status_code == 200, answer.text
    metrics = answer.json()["agent_metrics"]
    assert metrics["success_rate"] == 0.5 and metrics["pass@1"] == 0.5 and metrics["pass@2"] == 1.0
    assert metrics["csm/success_rate"] == 0.5
    assert aggregate_rollouts([[rows[0] | {"mask_sample": True}, rows[1]]])["pass@1"] == 0.0


def test_the_resources_session_contract(stack: Stack) -> None:
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    app = stack.resources.setup_webserver()
    seed = ResourcesSeedSessionRequest(resources_session_id="contract-1",
                                       episode_id=EpisodeId(rollout_id="r1"),
                                       task_id=TaskId(taskset="eog", task_id="t1"), task_data=row)
    check_resources_session_contract(app, seed, keeps_state=True)
    assert stack.gym.database_ids() == []
    with TestClient(app) as client:
        seeded = client.post("/seed_session", json=seed.model_copy(
            update={"resources_session_id": "contract-2"}).model_dump(mode="json"))
        assert seeded.status_code == 200, seeded.text
        step = script("solve")[0]
        called = client.post(f"/{step['name']}", json=step["arguments"])
        assert json.loads(called.text)["isError"] is False
        refused = client.post("/no_such_tool", json={})
        assert "not available in this task" in refused.text
        closed = client.post("/close_session", json={"resources_session_id": "contract-2",
                                                     "episode_id": {"rollout_id": "r1"}})
        assert closed.status_code == 200
    assert stack.gym.database_ids() == []


def test_an_unreachable_gym_fails_the_seed_for_a_retry(stack: Stack) -> None:
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    dead = EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="dead",
                                        gym_url_pools={stack.gym.name: [f"http://127.0.0.1:{free_port()}"]},
                                        seed_sql_root=str(PATHS.directory)),
        server_client=stack.resources.server_client)
    with TestClient(dead.setup_webserver()) as client:
        answer = client.post("/seed_session", json=row)
    assert answer.status_code == 503 and "seeding failed" in answer.text


@pytest.mark.parametrize("code", doc_examples("nemo-gym"))
def test_the_documented_example_runs(code: str, tmp_path: Path) -> None:
    assert 'NeMo Gym resources server: reward 1.0' in run_example(code, tmp_path)


def test_our_failure_kinds_are_in_nemo_gyms_vocabulary() -> None:
    from nemo_gym.failure_kinds import is_namespaced, is_registered

    from eog_core.integrations import NEMO_GYM_FAILURE_KINDS, nemo_gym_failure_kind

    for ours, theirs in NEMO_GYM_FAILURE_KINDS.items():
        assert is_registered(theirs) or (is_namespaced(theirs) and theirs.startswith("enterpriseops:")), ours
    assert nemo_gym_failure_kind("something_new") == "enterpriseops:something_new"
    assert nemo_gym_failure_kind(None) is None


def test_fail_mode_answers_503_from_verify_and_snapshots_come_from_files(stack: Stack, tmp_path: Path) -> None:
    snapshot = demo_tool_snapshot()
    (tmp_path / "demo.json").write_text(json.dumps({
        "gym_name": snapshot.gym_name,
        "tools": [{"name": t.name, "description": t.description, "inputSchema": dict(t.input_schema)}
                  for t in snapshot.tools]}), encoding="utf-8")
    server = EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="strict-infra",
                                        gym_url_pools={stack.gym.name: [stack.gym.url]},
                                        seed_sql_root=str(PATHS.directory), tool_snapshots=str(tmp_path),
                                        on_infrastructure_failure="fail", fractional_reward=True),
        server_client=stack.resources.server_client)
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: snapshot})
    listed = stack.gym.method_counts.get("tools/list", 0)
    response = {"id": "r", "object": "response", "created_at": 0, "model": "m", "output": [],
                "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}
    with TestClient(server.setup_webserver()) as client:  # half the work: a fractional reward
        assert client.post("/seed_session", json=row).status_code == 200
        for step in script("solve")[:4]:
            client.post(f"/{step['name']}", json=step["arguments"])
        partial = client.post("/verify", json=row | {"response": response}).json()
    assert 0.0 < partial["reward"] == partial["verifier_pass_rate"] < 1.0
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        stack.gym.drop_next(after_tool_call=True)
        step = script("solve")[0]
        assert json.loads(client.post(f"/{step['name']}", json=step["arguments"]).text)["isError"]
        failed = client.post("/verify", json=row | {"response": response})
    assert failed.status_code == 503 and "transport_peer_drop" in failed.text
    assert stack.gym.method_counts.get("tools/list", 0) == listed  # tools came from the file
    assert stack.gym.database_ids() == []


def test_a_retried_verify_answers_the_first_verdict(stack: Stack) -> None:
    """NeMo Gym may resend /verify when its answer was lost: the databases are gone by
    then, so the server answers the verdict it gave (it used to answer 400)."""
    server = EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="retry",
                                        gym_url_pools={stack.gym.name: [stack.gym.url]},
                                        seed_sql_root=str(PATHS.directory)),
        server_client=stack.resources.server_client)
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    response = {"id": "r", "object": "response", "created_at": 0, "model": "m", "output": [],
                "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        for step in script("solve"):
            client.post(f"/{step['name']}", json=step["arguments"])
        first = client.post("/verify", json=row | {"response": response})
        again = client.post("/verify", json=row | {"response": response})
    assert first.status_code == again.status_code == 200, again.text
    assert first.json()["reward"] == 1.0 and again.json() == first.json()
    assert stack.gym.database_ids() == []


def test_several_uvicorn_workers_are_refused_at_startup(stack: Stack) -> None:
    """Sessions live in one process; with num_workers > 1 NeMo Gym's uvicorn spreads a
    rollout's requests over processes, so the server refuses to start (known limit)."""
    from eog_core.errors import UsageError

    server = EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="workers",
                                        num_workers=2, gym_url_pools={stack.gym.name: [stack.gym.url]}),
        server_client=stack.resources.server_client)
    with pytest.raises(UsageError, match="num_workers must be 1, not 2"):
        server.setup_webserver()


def test_strict_and_parity_share_one_set_of_verifier_queries(stack: Stack) -> None:
    """/verify sends each distinct verifier query once for both verdicts (as ``eog-core
    run`` does; it used to verify twice: 12 SQL queries for the demo task instead of 6)."""
    queries = {v.validation_config.query for v in load_task(PATHS.task).verifiers}  # type: ignore[union-attr]
    before = stack.gym.request_counts.get("/api/sql-runner", 0)
    result = stack.run("solve")
    assert result["strict_success"] and result["parity_success"]
    assert result["strict_verdict"]["num_scored"] == 6 and result["parity_verdict"]["num_scored"] == 5
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
    server = EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="shutdown",
                                        gym_url_pools={stack.gym.name: [stack.gym.url]},
                                        seed_sql_root=str(PATHS.directory)),
        server_client=stack.resources.server_client)
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    sessions = set(stack.gym.session_ids())
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        step = script("solve")[0]
        assert json.loads(client.post(f"/{step['name']}", json=step["arguments"]).text)["isError"] is False
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
    with subprocess.Popen([sys.executable, "-m", "eog_core", "serve-model", "--json", "--port", "0"],
                          stdout=subprocess.PIPE, text=True) as model:
        try:
            assert model.stdout is not None
            base_url = json.loads(model.stdout.readline())["base_url"]
            for repeats in (4, 12):
                before = sum(gym.request_counts.values())
                done = subprocess.run(
                    [sys.executable, "-m", "eog_core", "run", str(PATHS.task), "--base-url", base_url,
                     "--model", "demo", "--gym", f"{gym.name}={gym.url}", "--seed-root",
                     str(PATHS.directory), "--repeats", str(repeats), "--concurrency", "4",
                     "--out", str(tmp_path / f"run{repeats}"), "-q"],
                    capture_output=True, text=True, timeout=300)
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
    useful = 1 + len(script("solve")) + len({v.validation_config.query  # type: ignore[union-attr]
                                             for v in task.verifiers}) + 1
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


RESPONSE = {"id": "r", "object": "response", "created_at": 0, "model": "m", "output": [],
            "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}


def a_server(stack: Stack, name: str, **options: Any) -> EogResourcesServer:
    return EogResourcesServer(
        config=EogResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name=name,
                                        gym_url_pools={stack.gym.name: [stack.gym.url]},
                                        seed_sql_root=str(PATHS.directory), **options),
        server_client=stack.resources.server_client)


def hand_off_from_a_stopped_loop(stack: Stack) -> None:
    """Seed on one loop that then stops (and is closed without running again), go on and
    verify on another."""
    import asyncio

    import httpx

    server = a_server(stack, "handoff")
    app = server.setup_webserver()
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})

    async def post(path: str, body: Any, cookies: httpx.Cookies | None = None) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://eog",
                                     cookies=cookies) as client:
            return await client.post(path, json=body)

    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        seeded = first.run_until_complete(post("/seed_session", row))  # then `first` stops
        assert seeded.status_code == 200, seeded.text
        step = script("solve")[0]
        called = second.run_until_complete(post(f"/{step['name']}", step["arguments"], seeded.cookies))
        assert json.loads(called.text)["isError"] is False
        verified = second.run_until_complete(post("/verify", row | {"response": RESPONSE}, seeded.cookies))
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


def test_a_retried_verify_in_fail_mode_answers_503_again(stack: Stack) -> None:
    """With ``on_infrastructure_failure: fail`` the rollout is closed before the 503; a
    resent /verify gets the same 503 (it used to answer 400: no seeded session)."""
    server = a_server(stack, "retry-fail", on_infrastructure_failure="fail")
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    with TestClient(server.setup_webserver()) as client:
        assert client.post("/seed_session", json=row).status_code == 200
        stack.gym.drop_next(after_tool_call=True)
        step = script("solve")[0]
        assert json.loads(client.post(f"/{step['name']}", json=step["arguments"]).text)["isError"]
        first = client.post("/verify", json=row | {"response": RESPONSE})
        again = client.post("/verify", json=row | {"response": RESPONSE})
    assert first.status_code == again.status_code == 503, again.text
    assert again.json() == first.json() and "transport_peer_drop" in again.text
    assert stack.gym.database_ids() == []


def test_a_session_the_janitor_closed_is_forgotten(stack: Stack) -> None:
    """A rollout left idle past ``session_ttl_seconds`` is closed by the janitor; the server
    then forgets it and answers its calls with one clear 409 (it kept the rollout forever,
    and a tool call on it raised ClosedError)."""
    import time

    server = a_server(stack, "ttl", session_ttl_seconds=0.05)
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
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


def test_the_closed_sessions_remembered_are_bounded(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Closed keys (never seeded again) and verify answers (for retries) are kept for the
    newest sessions only: the server's maps do not grow with every rollout."""
    import eog_core.integrations.nemo_gym as adapter

    monkeypatch.setattr(adapter, "_FINISHED_KEPT", 2)
    server = a_server(stack, "bounded")
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    with TestClient(server.setup_webserver()) as client:
        for index in range(4):
            closed = client.post("/close_session", json={"resources_session_id": f"k{index}",
                                                         "episode_id": {"rollout_id": "r"}})
            assert closed.status_code == 200
        seed = ResourcesSeedSessionRequest(resources_session_id="k3", episode_id=EpisodeId(rollout_id="r"),
                                           task_id=TaskId(taskset="eog", task_id="t"), task_data=row)
        refused = client.post("/seed_session", json=seed.model_dump(mode="json"))
        assert refused.status_code == 409 and "was closed" in refused.text
    assert list(server._finished) == ["k2", "k3"]
