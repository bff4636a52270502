"""Our ``decomposing`` requests against the differential's golden (upstream not needed).

``tests/golden/decomposing_parity.json`` was made by ``gen_decomposing_parity.py``, which
drove upstream's unmodified ``DecomposingPlannerOrchestrator`` (with LangChain) and ours on
the same scripted model and gym and found their requests, tool calls, plans, subtask
results and final answers equal. Here ours runs again, with the stand-in file: every
request, reduced the same way (the file's texts replaced by what was filled in), must be
the golden's, as must the tool calls, the plan, the results and the final answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core.local import LocalGym
from eog_core.run import (
    DECOMPOSING_SHA256,
    UPSTREAM_REVISION,
    Decomposer,
    ModelSettings,
    load_decomposing_template,
)
from tests.run.conftest import API_KEY, evaluate
from tests.run.decomposing_requests import normalise_decomposing, our_outcome, reduced_outcome
from tests.run.decomposing_upstream import fake_upstream
from tests.run.scripted_model import ScriptedModel

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "golden" / "decomposing_parity.json").read_text(encoding="utf-8")
)


def test_the_golden_is_of_the_pinned_revision_and_found_no_difference() -> None:
    assert GOLDEN["upstream_revision"] == UPSTREAM_REVISION
    assert GOLDEN["decomposing_planner_sha256"] == DECOMPOSING_SHA256
    assert GOLDEN["kept_differences"] == ["stream"]
    roles = set()
    for scenario in GOLDEN["scenarios"].values():
        assert scenario["equal"]
        ours = [{k: v for k, v in r.items() if k != "messages"} for r in scenario["requests"]]
        for mine, theirs in zip(ours, scenario["upstream"], strict=True):
            theirs = dict(
                theirs, params={k: v for k, v in theirs["params"].items() if k != "stream"}
            )
            assert mine == theirs
        roles |= {r["role"] for r in scenario["requests"]}
    assert roles == {"planner", "sub-agent", "memory"}
    retried = {name: s["upstream_retries"] for name, s in GOLDEN["scenarios"].items()}
    assert retried == dict.fromkeys(GOLDEN["scenarios"], 0) | {"demo-overflow": 6}


def _scenario(name: str) -> tuple[str, str, str | None]:
    script, _, planner = name.partition("+")
    script, _, api = script.partition("@")
    return script, api or "chat", planner or None


@pytest.mark.parametrize("name", sorted(GOLDEN["scenarios"]))
async def test_our_requests_are_the_goldens(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, name: str
) -> None:
    template = load_decomposing_template(fake_upstream(tmp_path / "upstream"))
    script, api, planner_model = _scenario(name)
    extra = {"extra_body": {"reasoning": {"effort": "low"}}} if api == "responses" else {}
    planner_settings = None
    if planner_model is not None:
        planner_settings = ModelSettings(
            model=planner_model, base_url=model.base_url, api=api, api_key=API_KEY, **extra
        )  # type: ignore[arg-type]
    report = await evaluate(
        gym,
        model,
        tmp_path / "run",
        name=script,
        api=api,
        settings=extra or None,
        concurrency=1,
        planner=Decomposer(template, planner_settings, retry_delay=0.01),
    )
    [record] = report.records
    reduced = normalise_decomposing(
        [r["body"] for r in model.requests], template=template, gym_url=gym.url
    )
    golden: dict[str, Any] = GOLDEN["scenarios"][name]
    assert len(reduced) == len(golden["requests"])
    for number, (mine, expected) in enumerate(zip(reduced, golden["requests"], strict=True)):
        assert mine == expected, f"request {number + 1}"
    outcome = reduced_outcome(template, our_outcome(record))
    assert outcome == {key: golden[key] for key in outcome}


@pytest.mark.skipif(
    not os.environ.get("EOG_UPSTREAM_DIR"), reason="set EOG_UPSTREAM_DIR to upstream @271f2c3"
)
async def test_with_upstream_s_own_file_the_requests_are_the_goldens_too(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    template = load_decomposing_template(os.environ["EOG_UPSTREAM_DIR"])
    assert template.known_revision
    report = await evaluate(gym, model, tmp_path, name="demo", planner=Decomposer(template))
    reduced = normalise_decomposing(
        [r["body"] for r in model.requests], template=template, gym_url=gym.url
    )
    assert reduced == GOLDEN["scenarios"]["demo"]["requests"]
    assert report.records[0]["success"]
