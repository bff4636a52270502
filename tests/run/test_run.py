"""``eog_core.run`` end to end: the scripted model on the demo task, on a real LocalGym."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from eog_core import Task, load_task
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from eog_core.run import ROLLOUTS_FILE
from eog_core.tasks import ToolSnapshot, ToolSpec, task_from_mapping, to_upstream
from tests.run.conftest import API_KEY, evaluate
from tests.run.scripted_model import FINAL_TEXT, ScriptedModel

APIS = ["chat", "responses"]
DEMO_VERIFIERS = [
    "entitlement_renewed",
    "telemetry_case_opened",
    "telemetry_case_opened",
    "login_case_resolved",
    "login_case_touched_recently",
    "customer_told",
]


def lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / ROLLOUTS_FILE).read_text().splitlines()]


@pytest.mark.parametrize("api", APIS)
async def test_correct_trajectory_passes_with_full_transcript(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, api: str
) -> None:
    report = await evaluate(gym, model, tmp_path, api=api)

    [record] = report.records
    assert lines(tmp_path) == [record]
    assert (
        record["status"],
        record["stop_reason"],
        record["success"],
        record["parity"]["success"],
        record["failure_kind"],
    ) == ("evaluated", "answered", True, True, None)
    assert [(r["name"], r["passed"]) for r in record["results"]] == [
        (n, True) for n in DEMO_VERIFIERS
    ]
    # parity collapses the two same-named verifiers, as upstream does
    assert record["parity"]["verification_summary"] == {
        "total": 5,
        "passed": 5,
        "failed": 0,
        "pass_rate": 1.0,
    }
    steps = load_demo_trajectory()
    calls = [c for turn in record["turns"] for c in turn["tool_calls"]]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        (s["name"], s["arguments"]) for s in steps
    ]
    # the first turn asked for two tools at once: both ran, in the model's order
    assert [c["name"] for c in record["turns"][0]["tool_calls"]] == ["find_account", "find_product"]
    assert record["num_turns"] == 8 and record["num_tool_calls"] == 9
    assert record["final_answer"] == FINAL_TEXT
    assert record["tools_used"] == list(dict.fromkeys(s["name"] for s in steps))
    assert record["usage"]["cached_tokens"] == 64 * 8
    assert record["usage"]["reasoning_tokens"] == 7 * 8
    assert record["usage"]["output_tokens"] == 20 * 8
    starts = [turn["started_at"] for turn in record["turns"]]
    assert starts == sorted(starts) and all(
        t["finished_at"] >= t["started_at"] for t in record["turns"]
    )
    assert all(c["latency_ms"] >= 0 and c["gym"] == gym.name and not c["is_error"] for c in calls)
    assert json.loads(calls[0]["observation"])["isError"] is False
    assert all(r["authorization"] == f"Bearer {API_KEY}" for r in model.requests)
    assert {r["api"] for r in model.requests} == {api}
    assert gym.database_ids() == []


@pytest.mark.parametrize("api", APIS)
async def test_wrong_trajectory_fails_every_verifier(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, api: str
) -> None:
    [record] = (await evaluate(gym, model, tmp_path, name="demo-wrong", api=api)).records

    assert (record["status"], record["success"], record["parity"]["success"]) == (
        "evaluated",
        False,
        False,
    )
    assert [(r["name"], r["passed"]) for r in record["results"]] == [
        (n, False) for n in DEMO_VERIFIERS
    ]
    assert record["results"][0]["actual"] == "active until 2026-06-30"
    assert record["verification_summary"]["total"] == 6
    assert record["parity"]["verification_summary"]["total"] == 5
    assert record["final_answer"] == "Done, I renewed it."
    assert gym.database_ids() == []


async def test_tools_are_presented_in_each_api_shape(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "chat", name="demo-answer", api="chat")
    await evaluate(gym, model, tmp_path / "responses", name="demo-answer", api="responses")
    chat, responses = (r["body"] for r in model.requests)
    assert chat["tools"][0]["type"] == "function" and "name" in chat["tools"][0]["function"]
    assert responses["tools"][0]["strict"] is False and "name" in responses["tools"][0]
    assert [t["function"]["name"] for t in chat["tools"]] == [t["name"] for t in responses["tools"]]
    assert chat["messages"][0]["role"] == "system" and responses["input"][1]["role"] == "user"
    assert (chat["temperature"], chat["max_completion_tokens"]) == (0.0, 4096)
    assert responses["max_output_tokens"] == 4096


async def test_extra_body_wins_and_null_removes(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    extra = {"temperature": None, "top_p": 0.5, "max_completion_tokens": 77}
    await evaluate(gym, model, tmp_path, name="demo-answer", settings={"extra_body": extra})
    body = model.requests[0]["body"]
    assert (
        "temperature" not in body and body["top_p"] == 0.5 and body["max_completion_tokens"] == 77
    )


async def test_429_with_retry_after_and_500_are_retried(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.fail_next(1, status=429, headers={"retry-after-ms": "300"})
    model.fail_next(1, status=500)
    model.fail_next(1, status=429, headers={"Retry-After": "0"})
    [record] = (await evaluate(gym, model, tmp_path)).records

    assert record["success"] is True and record["attempts"] == 1
    assert record["turns"][0]["attempts"] == 4
    first, second = model.requests[0]["time"], model.requests[1]["time"]
    assert second - first >= 0.29  # 300 ms asked: the retry left at least that after the 429


async def test_slow_answer_times_out_and_is_retried(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.fail_next(1, status=200, delay=5.0)
    [record] = (await evaluate(gym, model, tmp_path, settings={"timeout": 1.0})).records
    assert record["success"] is True
    assert record["turns"][0]["attempts"] >= 2


async def test_model_unreachable_is_incomplete_never_zero(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.fail_next(100, status=503)
    [record] = (
        await evaluate(gym, model, tmp_path, settings={"max_retries": 1}, rollout_retries=1)
    ).records

    assert (record["status"], record["failure_kind"], record["evaluation_completed"]) == (
        "incomplete",
        "model_unreachable",
        False,
    )
    assert record["attempts"] == 2 and len(model.requests) == 4
    assert record["parity"]["evaluation_completed"] is False
    assert not (tmp_path / "upstream").exists()  # upstream would have averaged it in as 0
    assert gym.database_ids() == []


async def test_refused_request_is_not_retried(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    """Past the preflight (which refuses an unknown model before seeding: tests/run/test_endings.py),
    a refused request is recorded at once."""
    [record] = (await evaluate(gym, model, tmp_path, name="no-such-model", preflight=False)).records
    assert (record["status"], record["failure_kind"], record["attempts"]) == (
        "incomplete",
        "model_error",
        1,
    )
    assert "404" in record["failure_reason"] and len(model.requests) == 1


async def test_gym_unreachable_retries_the_rollout_then_records_it(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, unused_tcp_port: int
) -> None:
    dead = GymDirectory({gym.name: f"http://127.0.0.1:{unused_tcp_port}"})
    [record] = (await evaluate(gym, model, tmp_path, directory=dead, rollout_retries=2)).records
    assert (record["status"], record["failure_kind"], record["attempts"]) == (
        "incomplete",
        "gym_unreachable",
        3,
    )
    assert model.requests == []


async def test_context_overflow_and_max_turns_are_recorded_as_such(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    [overflow] = (await evaluate(gym, model, tmp_path / "a", name="demo-overflow")).records
    [endless] = (
        await evaluate(gym, model, tmp_path / "b", name="demo-endless", max_turns=3)
    ).records

    assert (overflow["status"], overflow["stop_reason"], overflow["num_turns"]) == (
        "evaluated",
        "context_overflow",
        2,
    )
    assert "maximum context length" in overflow["context_overflow"]
    assert overflow["success"] is False and overflow["evaluation_completed"] is True
    assert (endless["stop_reason"], endless["num_turns"], endless["success"]) == (
        "max_turns",
        3,
        False,
    )
    assert gym.database_ids() == []


async def test_resume_skips_finished_and_reruns_torn_and_incomplete(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    first = await evaluate(gym, model, tmp_path, repeats=2)
    assert first.ran == 2
    done = lines(tmp_path)
    incomplete = {
        **done[1],
        "repeat": 2,
        "status": "incomplete",
        "failure_kind": "model_unreachable",
    }
    with (tmp_path / ROLLOUTS_FILE).open("a") as out:
        out.write(json.dumps(incomplete) + "\n" + json.dumps(done[0])[:40])  # torn last line
    model.requests.clear()

    second = await evaluate(gym, model, tmp_path, repeats=4)

    assert (second.ran, second.skipped, second.all_evaluated) == (2, 2, True)
    assert len(model.requests) == 2 * 8
    records = lines(tmp_path)
    assert records[:2] == done
    assert sorted(r["repeat"] for r in records) == [0, 1, 2, 3]
    assert all(r["status"] == "evaluated" for r in records)


async def test_resume_refuses_another_models_output(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo-answer")
    with pytest.raises(Exception, match="holds rollouts of model 'demo-answer'"):
        await evaluate(gym, model, tmp_path, name="demo-correct")


async def test_concurrency_and_repeats(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, demo_task: object
) -> None:
    tasks = [attrs.evolve(demo_task, task_id=f"demo_{i}") for i in range(3)]  # type: ignore[misc]
    report = await evaluate(gym, model, tmp_path, tasks=tasks, repeats=2, concurrency=4)
    assert [(r["task_id"], r["repeat"]) for r in report.records] == [
        (f"demo_{i}", r) for r in range(2) for i in range(3)
    ]
    assert all(r["success"] for r in report.records)
    files = sorted(
        p.relative_to(tmp_path / "upstream").as_posix()
        for p in (tmp_path / "upstream").rglob("*.json")
    )
    assert files == [
        f"run_{r}/results_oracle__csm__demo_{i}.json" for r in (1, 2) for i in range(3)
    ]
    assert gym.database_ids() == []


async def test_a_rate_bound_run_still_scores(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    [record] = (
        await evaluate(gym, model, tmp_path, settings={"max_requests_per_second": 50})
    ).records
    assert record["success"] is True and len(model.requests) == 8


async def test_gym_failure_mid_rollout_retries_the_whole_rollout(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    gym.drop_next(1, after_tool_call=True)  # a tool ran, its answer was lost: never re-sent
    [record] = (await evaluate(gym, model, tmp_path, rollout_retries=1)).records
    assert (record["status"], record["success"], record["attempts"]) == ("evaluated", True, 2)
    assert record["num_tool_calls"] == 9  # the record is the clean second attempt
    assert gym.database_ids() == []


@pytest.mark.parametrize(("judge", "passed"), [("judge-9", True), ("judge-2", False)])
async def test_response_check_is_judged_by_the_model_at_temperature_0(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, judge: str, passed: bool
) -> None:
    task = task_from_mapping(
        {
            **to_upstream(load_task(demo_paths().task)),
            "verifiers": [
                {
                    "verifier_type": "response_check",
                    "name": "told",
                    "gym_name": gym.name,
                    "validation_config": {
                        "sql_query": 'SELECT number FROM "case" WHERE priority = 2',
                        "comparison_prompt": "Does the answer name the new case?",
                        "minimum_comparison_value": 7,
                    },
                }
            ],
        }
    )
    [record] = (await evaluate(gym, model, tmp_path, tasks=[task], judge_model=judge)).records

    assert (record["success"], record["parity"]["success"]) == (passed, passed)
    judged = [r["body"] for r in model.requests if r["body"]["model"] == judge]
    assert len(judged) == 2  # strict and parity each ask once
    assert all(b["temperature"] == 0.0 and "tools" not in b for b in judged)
    assert FINAL_TEXT in judged[0]["messages"][1]["content"]


async def test_tool_snapshots_replace_listing(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    snapshot = ToolSnapshot(
        gym_name=gym.name,
        tools=tuple(ToolSpec.from_mcp(tool, gym=gym.name) for tool in gym.tools.describe()),
    )
    gym.reset_counters()
    [record] = (await evaluate(gym, model, tmp_path, tool_snapshots={gym.name: snapshot})).records
    assert record["success"] is True and record["tools_offered"] == 9
    assert gym.method_counts.get("tools/list", 0) == 0


async def test_strict_and_parity_share_one_set_of_verifier_queries(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, demo_task: Task
) -> None:
    [record] = (await evaluate(gym, model, tmp_path)).records
    queries = {v.validation_config.query for v in demo_task.verifiers}  # type: ignore[union-attr]
    assert record["num_scored"] == 6 and record["parity"]["num_scored"] == 5
    assert gym.request_counts["/api/sql-runner"] == len(queries)


async def test_parity_reads_a_query_the_read_only_pass_refused_as_upstream_would(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    task = task_from_mapping(
        {
            **to_upstream(load_task(demo_paths().task)),
            "verifiers": [
                {
                    "verifier_type": "database_state",
                    "name": "writes",
                    "gym_name": gym.name,
                    "validation_config": {
                        "query": "UPDATE account SET tier = tier WHERE 1 = 0",
                        "expected_value": "[",
                        "comparison_type": "contains",
                    },
                }
            ],
        }
    )
    [record] = (await evaluate(gym, model, tmp_path, tasks=[task], name="demo-answer")).records

    assert (record["status"], record["failure_kind"]) == ("incomplete", "config_error")
    assert record["parity"]["success"] is True  # upstream sends the query and reads []
