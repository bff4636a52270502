"""EogResourcesServer under NeMo Gym's own SimpleAgent, end to end on loopback.

Three real servers: the agent (``responses_api_agents.simple_agent``), our
resources server, and a replaying Responses-API model server; plus LocalGym.
``POST /run`` on the agent seeds, loops model -> tool -> model, verifies.
"""

import json
from pathlib import Path

import pytest
import requests
from fastapi.testclient import TestClient
from nemo_gym.base_resources_server import ResourcesSeedSessionRequest
from nemo_gym.episode_types import EpisodeId, TaskId
from nemo_gym.testing.session_conformance import check_resources_session_contract

from eog_core import load_task, to_nemo_row
from eog_core.integrations.nemo_gym import (
    EogResourcesServer,
    EogResourcesServerConfig,
    aggregate_rollouts,
)
from eog_core.local import demo_tool_snapshot
from tests_integrations._support import doc_examples, free_port, run_example, script
from tests_integrations.nemo_gym.stack import PATHS, Stack


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
    assert (
        result["failure_kind"] == "transport_peer_drop"
        and "failed on the gym" in result["failure_reason"]
    )
    assert result["num_tool_errors"] == 1
    assert stack.gym.database_ids() == []


def test_aggregate_metrics_per_domain_and_pass_at_k(stack: Stack) -> None:
    rows = [stack.run("solve"), stack.run("idle")]
    answer = requests.post(
        f"{stack.agent_url}/aggregate_metrics",
        json={
            "verify_responses": [
                r | {"_ng_task_index": 0, "_ng_rollout_index": i} for i, r in enumerate(rows)
            ]
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    metrics = answer.json()["agent_metrics"]
    assert metrics["success_rate"] == 0.5 and metrics["pass@1"] == 0.5 and metrics["pass@2"] == 1.0
    assert metrics["csm/success_rate"] == 0.5
    assert aggregate_rollouts([[rows[0] | {"mask_sample": True}, rows[1]]])["pass@1"] == 0.0


def test_the_resources_session_contract(stack: Stack) -> None:
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    app = stack.resources.setup_webserver()
    seed = ResourcesSeedSessionRequest(
        resources_session_id="contract-1",
        episode_id=EpisodeId(rollout_id="r1"),
        task_id=TaskId(taskset="eog", task_id="t1"),
        task_data=row,
    )
    check_resources_session_contract(app, seed, keeps_state=True)
    assert stack.gym.database_ids() == []
    with TestClient(app) as client:
        seeded = client.post(
            "/seed_session",
            json=seed.model_copy(update={"resources_session_id": "contract-2"}).model_dump(
                mode="json"
            ),
        )
        assert seeded.status_code == 200, seeded.text
        step = script("solve")[0]
        called = client.post(f"/{step['name']}", json=step["arguments"])
        assert json.loads(called.text)["isError"] is False
        refused = client.post("/no_such_tool", json={})
        assert "not available in this task" in refused.text
        closed = client.post(
            "/close_session",
            json={"resources_session_id": "contract-2", "episode_id": {"rollout_id": "r1"}},
        )
        assert closed.status_code == 200
    assert stack.gym.database_ids() == []


def test_an_unreachable_gym_fails_the_seed_for_a_retry(stack: Stack) -> None:
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    dead = EogResourcesServer(
        config=EogResourcesServerConfig(
            host="127.0.0.1",
            port=0,
            entrypoint="",
            name="dead",
            gym_url_pools={stack.gym.name: [f"http://127.0.0.1:{free_port()}"]},
            seed_sql_root=str(PATHS.directory),
        ),
        server_client=stack.resources.server_client,
    )
    with TestClient(dead.setup_webserver()) as client:
        answer = client.post("/seed_session", json=row)
    assert answer.status_code == 503 and "seeding failed" in answer.text


@pytest.mark.parametrize("code", doc_examples("nemo-gym"))
def test_the_documented_example_runs(code: str, tmp_path: Path) -> None:
    assert "NeMo Gym resources server: reward 1.0" in run_example(code, tmp_path)


def test_our_failure_kinds_are_in_nemo_gyms_vocabulary() -> None:
    from nemo_gym.failure_kinds import is_namespaced, is_registered

    from eog_core.integrations import NEMO_GYM_FAILURE_KINDS, nemo_gym_failure_kind

    for ours, theirs in NEMO_GYM_FAILURE_KINDS.items():
        assert is_registered(theirs) or (
            is_namespaced(theirs) and theirs.startswith("enterpriseops:")
        ), ours
    assert nemo_gym_failure_kind("something_new") == "enterpriseops:something_new"
    assert nemo_gym_failure_kind(None) is None


def test_fail_mode_answers_503_from_verify_and_snapshots_come_from_files(
    stack: Stack, tmp_path: Path
) -> None:
    snapshot = demo_tool_snapshot()
    (tmp_path / "demo.json").write_text(
        json.dumps(
            {
                "gym_name": snapshot.gym_name,
                "tools": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": dict(t.input_schema),
                    }
                    for t in snapshot.tools
                ],
            }
        ),
        encoding="utf-8",
    )
    server = EogResourcesServer(
        config=EogResourcesServerConfig(
            host="127.0.0.1",
            port=0,
            entrypoint="",
            name="strict-infra",
            gym_url_pools={stack.gym.name: [stack.gym.url]},
            seed_sql_root=str(PATHS.directory),
            tool_snapshots=str(tmp_path),
            on_infrastructure_failure="fail",
            fractional_reward=True,
        ),
        server_client=stack.resources.server_client,
    )
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: snapshot})
    listed = stack.gym.method_counts.get("tools/list", 0)
    response = {
        "id": "r",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
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
        # The rollout is closed before the 503: a resent /verify gets the same 503 (it
        # used to answer 400, no seeded session).
        again = client.post("/verify", json=row | {"response": response})
    assert failed.status_code == 503 and "transport_peer_drop" in failed.text
    assert again.status_code == 503 and again.json() == failed.json()
    assert stack.gym.method_counts.get("tools/list", 0) == listed  # tools came from the file
    assert stack.gym.database_ids() == []


def test_a_retried_verify_answers_the_first_verdict(stack: Stack) -> None:
    """NeMo Gym may resend /verify when its answer was lost: the databases are gone by
    then, so the server answers the verdict it gave (it used to answer 400)."""
    server = EogResourcesServer(
        config=EogResourcesServerConfig(
            host="127.0.0.1",
            port=0,
            entrypoint="",
            name="retry",
            gym_url_pools={stack.gym.name: [stack.gym.url]},
            seed_sql_root=str(PATHS.directory),
        ),
        server_client=stack.resources.server_client,
    )
    row = to_nemo_row(load_task(PATHS.task), {stack.gym.name: demo_tool_snapshot()})
    response = {
        "id": "r",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
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
        config=EogResourcesServerConfig(
            host="127.0.0.1",
            port=0,
            entrypoint="",
            name="workers",
            num_workers=2,
            gym_url_pools={stack.gym.name: [stack.gym.url]},
        ),
        server_client=stack.resources.server_client,
    )
    with pytest.raises(UsageError, match="num_workers must be 1, not 2"):
        server.setup_webserver()
