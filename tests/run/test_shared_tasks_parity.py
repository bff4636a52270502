"""Our orchestrators on the 13 shared upstream tasks against the differential's golden.

``tests/golden/shared_tasks_parity.json`` was made by ``gen_shared_tasks_parity.py``, which
drove upstream's unmodified ``ReactOrchestrator`` and ``PlannerReactOrchestrator`` (with
LangChain) and ours, on both APIs, against stub gyms serving the tool snapshots and one scripted
model, and found every request equal. Here ours runs again on the same stub gyms and model
(``planner_react`` with the stand-in planner file, as CI has no upstream): every request,
reduced the same way, must be the golden's, as must the tool calls, what the gyms received, the
plan and the final answer. Needs the shared data (skipped without it, failed with ``CI=true``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.run import PLANNER_REACT_SHA256, UPSTREAM_REVISION, Planner, load_planner_template
from tests.conftest import require_eog_data
from tests.run.planner_requests import digest, normalise_requests
from tests.run.planner_upstream import fake_upstream
from tests.run.shared_tasks import (
    RUNS,
    StubGyms,
    our_run,
    run_name,
    seed_folder,
    shared_model,
    shared_tasks,
    withhold_prose,
)

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "golden" / "shared_tasks_parity.json").read_text(encoding="utf-8")
)
TASK_IDS = sorted({name.split("/")[0] for name in GOLDEN["runs"]})


def test_the_golden_covers_every_shared_task_and_run_and_found_no_difference() -> None:
    assert GOLDEN["upstream_revision"] == UPSTREAM_REVISION
    assert GOLDEN["planner_react_sha256"] == PLANNER_REACT_SHA256
    assert GOLDEN["kept_differences"] == ["stream"]
    assert GOLDEN["tasks"] == len(TASK_IDS) == 13
    assert len(GOLDEN["runs"]) == 13 * len(RUNS)
    for name, run in GOLDEN["runs"].items():
        assert run["equal"], name
        ours = [{k: v for k, v in r.items() if k != "messages"} for r in run["requests"]]
        theirs = [
            dict(r, params={k: v for k, v in r["params"].items() if k != "stream"})
            for r in run["upstream"]
        ]
        assert ours == theirs, name
        assert len(run["tool_calls"]) == len(run["gym_calls"]) == 3, name


def test_the_golden_holds_no_task_prose() -> None:
    text = json.dumps(GOLDEN)
    assert "Policy" not in text and "prose_sha256" in text


@pytest.mark.parametrize("task_id", TASK_IDS)
async def test_our_requests_on_a_shared_task_are_the_goldens(tmp_path: Path, task_id: str) -> None:
    data = require_eog_data()
    [task] = [task for _, task in shared_tasks(data) if task.task_id == task_id]
    template = load_planner_template(fake_upstream(tmp_path / "upstream"))
    seed_root = seed_folder(tmp_path / "seeds", [task])
    async with StubGyms(data) as gyms, shared_model(data) as model:
        gym_url = gyms.gyms[task.gym_servers[0].name].url
        for orchestrator, api in RUNS:
            name = run_name(task, orchestrator, api)
            golden: dict[str, Any] = GOLDEN["runs"][name]
            model.requests.clear()
            planner = Planner(template) if orchestrator == "planner_react" else None
            run = await our_run(task, model, gyms, seed_root, planner, api)
            reduced = normalise_requests(
                [r["body"] for r in model.requests],
                prompt_template=template.prompt,
                handoff=template.handoff,
                gym_url=gym_url,
            )
            reduced = withhold_prose(reduced, task)
            assert len(reduced) == len(golden["requests"]), name
            for number, (mine, expected) in enumerate(
                zip(reduced, golden["requests"], strict=True), start=1
            ):
                assert mine == expected, f"{name}: request {number}"
            assert run["tool_calls"] == golden["tool_calls"], name
            assert gyms.take_calls(task) == golden["gym_calls"], name
            plan = None if run["plan"] is None else digest(run["plan"])
            assert plan == golden["plan_sha256"], name
            assert run["final_answer"] == golden["final_answer"], name
