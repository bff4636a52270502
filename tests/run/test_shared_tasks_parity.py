"""Our orchestrators on the 13 shared upstream tasks against the differential's golden.

``tests/golden/shared_tasks_parity.json`` was made by ``gen_shared_tasks_parity.py``, which
drove upstream's unmodified ``ReactOrchestrator``, ``PlannerReactOrchestrator`` and
``DecomposingPlannerOrchestrator`` (with LangChain) and ours, on both APIs, against stub gyms
serving the tool snapshots and one scripted model, and found every request equal. Here ours
runs again on the same stub gyms and model (``planner_react`` with the stand-in planner file, as
CI has no upstream; ``decomposing`` with upstream's file when ``EOG_UPSTREAM_DIR`` is set, else
the stand-in): every request, reduced the same way, must be the golden's, as must the tool
calls, what the gyms received, the plan, the subtasks' results and the final answer. Needs the
shared data (skipped without it, failed with ``CI=true``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core.run import (
    DECOMPOSING_SHA256,
    PLANNER_REACT_SHA256,
    UPSTREAM_REVISION,
    DecomposingTemplate,
    load_decomposing_template,
    load_planner_template,
)
from tests.conftest import require_eog_data
from tests.run.decomposing_upstream import fake_upstream as fake_decomposing_upstream
from tests.run.planner_requests import normalise_requests
from tests.run.planner_upstream import fake_upstream
from tests.run.shared_tasks import (
    RUNS,
    StubGyms,
    kept_outcome,
    normalise_shared_decomposing,
    our_run,
    planner_for,
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
    assert GOLDEN["decomposing_planner_sha256"] == DECOMPOSING_SHA256
    assert GOLDEN["kept_differences"] == ["stream"]
    assert GOLDEN["tasks"] == len(TASK_IDS) == 13
    assert len(GOLDEN["runs"]) == 13 * len(RUNS) == 13 * 6
    for name, run in GOLDEN["runs"].items():
        assert run["equal"], name
        ours = [{k: v for k, v in r.items() if k != "messages"} for r in run["requests"]]
        theirs = [
            dict(r, params={k: v for k, v in r["params"].items() if k != "stream"})
            for r in run["upstream"]
        ]
        assert ours == theirs, name
        assert len(run["tool_calls"]) == len(run["gym_calls"]) == 3, name
        if "/decomposing" in name:
            roles = [r["role"] for r in run["requests"]]
            part = ["sub-agent", "sub-agent", "memory"]
            assert roles == ["planner", *part, *part], name
            assert [r["success"] for r in run["results"]] == [True, True], name


def _decomposing_template(tmp_path: Path) -> DecomposingTemplate:
    """Upstream's file when ``EOG_UPSTREAM_DIR`` names a checkout, else the stand-in."""
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if folder:
        template = load_decomposing_template(folder)
        assert template.known_revision
        return template
    return load_decomposing_template(fake_decomposing_upstream(tmp_path / "decomposing"))


def test_the_golden_holds_no_task_prose() -> None:
    text = json.dumps(GOLDEN)
    assert "Policy" not in text and "prose_sha256" in text


@pytest.mark.parametrize("task_id", TASK_IDS)
async def test_our_requests_on_a_shared_task_are_the_goldens(tmp_path: Path, task_id: str) -> None:
    data = require_eog_data()
    [task] = [task for _, task in shared_tasks(data) if task.task_id == task_id]
    template = load_planner_template(fake_upstream(tmp_path / "upstream"))
    decomposing = _decomposing_template(tmp_path)
    seed_root = seed_folder(tmp_path / "seeds", [task])
    async with StubGyms(data) as gyms, shared_model(data) as model:
        gym_url = gyms.gyms[task.gym_servers[0].name].url
        for orchestrator, api in RUNS:
            name = run_name(task, orchestrator, api)
            golden: dict[str, Any] = GOLDEN["runs"][name]
            model.requests.clear()
            planner = planner_for(orchestrator, template, decomposing)
            run = await our_run(task, model, gyms, seed_root, planner, api)
            bodies = [r["body"] for r in model.requests]
            if orchestrator == "decomposing":
                reduced = normalise_shared_decomposing(
                    bodies, template=decomposing, gym_url=gym_url
                )
            else:
                reduced = normalise_requests(
                    bodies,
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
            assert gyms.take_calls(task) == golden["gym_calls"], name
            outcome = kept_outcome(orchestrator, decomposing, run)
            assert outcome == {key: golden[key] for key in outcome}, name
