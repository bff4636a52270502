"""Our ``planner_react`` requests against the differential's golden (upstream not needed).

``tests/golden/planner_parity.json`` was made by ``gen_planner_parity.py``, which drove
upstream's unmodified ``PlannerReactOrchestrator`` (with LangChain) and ours on the same
scripted model and gym and found their requests equal. Here ours runs again, with the
stand-in planner file: every request, reduced the same way (the file's texts replaced by
hashes of what was filled in), must be the golden's, as must the tool calls, the plan and
the final answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core import load_task
from eog_core.local import LocalGym
from eog_core.run import (
    PLANNER_REACT_SHA256,
    UPSTREAM_REVISION,
    Planner,
    load_planner_template,
    planner_tool_entries,
)
from eog_core.tasks import load_tool_snapshots, merge_tools
from tests.conftest import require_eog_data
from tests.run.conftest import evaluate
from tests.run.planner_requests import digest, normalise_requests, template_pattern
from tests.run.planner_upstream import fake_upstream
from tests.run.scripted_model import ScriptedModel

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "golden" / "planner_parity.json").read_text(encoding="utf-8")
)


def test_the_golden_is_of_the_pinned_revision_and_found_no_difference() -> None:
    assert GOLDEN["upstream_revision"] == UPSTREAM_REVISION
    assert GOLDEN["planner_react_sha256"] == PLANNER_REACT_SHA256
    assert GOLDEN["kept_differences"] == ["stream"]
    for scenario in GOLDEN["scenarios"].values():
        assert scenario["equal"]
        ours = [{k: v for k, v in r.items() if k != "messages"} for r in scenario["requests"]]
        for mine, theirs in zip(ours, scenario["upstream"], strict=True):
            theirs = dict(
                theirs, params={k: v for k, v in theirs["params"].items() if k != "stream"}
            )
            assert mine == theirs


@pytest.mark.parametrize("script", sorted(GOLDEN["scenarios"]))
async def test_our_requests_are_the_goldens(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, script: str
) -> None:
    template = load_planner_template(fake_upstream(tmp_path / "upstream"))
    name, _, api = script.partition("@")
    report = await evaluate(
        gym,
        model,
        tmp_path / "run",
        name=name,
        api=api or "chat",
        settings={"extra_body": {"reasoning": {"effort": "low"}}} if api else None,
        concurrency=1,
        planner=Planner(template),
    )
    [record] = report.records
    bodies = [r["body"] for r in model.requests]
    reduced = normalise_requests(
        bodies, prompt_template=template.prompt, handoff=template.handoff, gym_url=gym.url
    )
    golden: dict[str, Any] = GOLDEN["scenarios"][script]
    assert len(reduced) == len(golden["requests"])
    for number, (mine, expected) in enumerate(zip(reduced, golden["requests"], strict=True)):
        assert mine == expected, f"request {number + 1}"
    calls = [
        [c["name"], json.loads(c["arguments"])] for t in record["turns"] for c in t["tool_calls"]
    ]
    assert calls == golden["tool_calls"]
    assert digest(record["plan"]) == golden["plan_sha256"]
    assert record["final_answer"] == golden["final_answer"]


@pytest.mark.skipif(
    not os.environ.get("EOG_UPSTREAM_DIR"), reason="set EOG_UPSTREAM_DIR to upstream @271f2c3"
)
async def test_with_upstream_s_own_file_the_requests_are_the_goldens_too(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    template = load_planner_template(os.environ["EOG_UPSTREAM_DIR"])
    assert template.known_revision
    report = await evaluate(gym, model, tmp_path, name="demo", planner=Planner(template))
    reduced = normalise_requests(
        [r["body"] for r in model.requests],
        prompt_template=template.prompt,
        handoff=template.handoff,
        gym_url=gym.url,
    )
    assert reduced == GOLDEN["scenarios"]["demo"]["requests"]
    assert report.records[0]["success"]


def test_the_planner_prompts_of_the_shared_tasks_fill_in_what_upstream_s_did(
    tmp_path: Path,
) -> None:
    """The 13 shared upstream tasks on their gyms' tool snapshots: upstream's prompts (made by
    its executor's tool discovery and ``construct_prompt``) and ours were equal; ours, with the
    stand-in file, fill in the same system policy, user task and tools JSON (every listed key
    of the real gyms' tools, in order)."""
    data = require_eog_data()
    golden = GOLDEN["shared_task_prompts"]
    assert len(golden) == 13 and all(outcome["equal"] for outcome in golden.values())
    template = load_planner_template(fake_upstream(tmp_path))
    pattern = template_pattern(template.prompt)
    snapshots = load_tool_snapshots(data / "tools")
    seen = set()
    for path in sorted((data / "tasks").rglob("*.json")):
        task = load_task(path)
        if task.task_id not in golden:
            continue
        tools = merge_tools(task, snapshots).tools
        prompt = template.planner_prompt(
            task.system_prompt or "",
            task.user_prompt or "",
            planner_tool_entries(tools, {g.name: g.url for g in task.gym_servers}),
        )
        found = pattern.fullmatch(prompt)
        assert found is not None
        values = {k: digest(v) for k, v in found.groupdict().items()}
        assert values == golden[task.task_id]["values_sha256"], task.task_id
        seen.add(task.task_id)
    assert seen == set(golden)
