"""Rollouts and scoring sharded over async Ray actors on a local ``ray.init()``; the gym
runs in the driver's thread and the actors reach it over loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import ray

from eog_core import load_task
from eog_core.gym import TaskSession
from eog_core.integrations.ray import EogWorker, run_rollouts, task_record
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from tests_integrations._support import doc_examples, run_example

PATHS = demo_paths()
REPO = Path(__file__).resolve().parents[2]


async def replay_agent(session: TaskSession) -> str:
    """Stand-in for a model: the demo's correct tool calls; says which calls failed."""
    failed = []
    for step in load_demo_trajectory():
        result = await session.call_tool(step["name"], step["arguments"])
        if result.is_error:
            failed.append(step["name"])
    return f"done; tool errors: {', '.join(failed) or 'none'}"


@pytest.fixture(scope="module")
def gym() -> Iterator[LocalGym]:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
            }
        },
    )
    try:
        with LocalGym.demo().run_in_thread() as server:
            yield server
    finally:
        ray.shutdown()


def test_rollouts_over_actors_score_and_come_back_as_arrow_rows(gym: LocalGym) -> None:
    task = load_task(PATHS.task)
    options = {
        "replicas": {gym.name: [gym.url]},
        "seed_root": str(PATHS.directory),
        "num_actors": 2,
    }
    solved, leaks = run_rollouts([task], replay_agent, repeats=4, **options)
    idle, idle_leaks = run_rollouts([task_record(task)], None, repeats=2, **options)
    assert [r["reward"] for r in solved] == [1.0] * 4 and [r["repeat"] for r in solved] == [
        0,
        1,
        2,
        3,
    ]
    assert len({r["worker"] for r in solved}) == 2  # sharded over both actors
    assert [r["reward"] for r in idle] == [0.0, 0.0]
    assert leaks == idle_leaks == [] and gym.database_ids() == []
    table = pa.Table.from_pylist(solved + idle)
    assert table.num_rows == 6 and table.column("task_id").to_pylist() == [task.task_id] * 6


def test_a_gym_fault_reaches_the_agent_as_a_tool_error(gym: LocalGym) -> None:
    gym.drop_next(after_tool_call=True)
    [row], leaks = run_rollouts(
        [load_task(PATHS.task)],
        replay_agent,
        num_actors=1,
        replicas={gym.name: [gym.url]},
        seed_root=str(PATHS.directory),
    )
    assert row["final_response"] == "done; tool errors: find_account"
    assert row["tool_error_kinds"] == ["gym_protocol"] and row["num_tool_errors"] == 1
    assert leaks == [] and gym.database_ids() == []


def test_a_session_seeded_by_one_actor_is_scored_by_another(gym: LocalGym) -> None:
    worker = ray.remote(EogWorker)
    seeder, scorer = (
        worker.remote({gym.name: [gym.url]}, seed_root=str(PATHS.directory)) for _ in range(2)
    )
    handle = ray.get(
        seeder.rollout.remote(task_record(load_task(PATHS.task)), replay_agent, hand_off=True)
    )
    assert gym.database_ids() == list(handle["database_ids"].values())
    row = ray.get(scorer.verify.remote(handle))
    assert row["reward"] == 1.0 and ray.get(seeder.close.remote()) == []
    assert ray.get(scorer.close.remote()) == [] and gym.database_ids() == []


@pytest.mark.parametrize("code", doc_examples("ray"))
def test_the_documented_example_runs(code: str, tmp_path: Path) -> None:
    assert "'reward': 1.0" in run_example(code, tmp_path)
