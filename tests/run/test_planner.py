"""``planner_react``: upstream's texts read from a checkout, the plan, then the ReAct loop.

Against the demo gym and the scripted model on loopback; the planner's texts come from a
stand-in file of upstream's shape (``tests/run/planner_upstream.py``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core import load_task
from eog_core.cli import main
from eog_core.errors import UsageError
from eog_core.local import DEMO_SERVER_NAME, PLAN_TEXT, LocalGym, build_demo_tools, demo_paths
from eog_core.run import (
    PLANNER_REACT_SHA256,
    EvaluationPlan,
    ModelSettings,
    Planner,
    RolloutOptions,
    load_planner_template,
    run_evaluation,
)
from eog_core.run._planner_source import PLANNER_REACT_FILE
from eog_core.tasks import load_tool_snapshots
from tests.report.page import transcripts
from tests.run.conftest import API_KEY, evaluate
from tests.run.planner_upstream import fake_upstream
from tests.run.scripted_model import ScriptedModel


@pytest.fixture
def planner(tmp_path: Path) -> Planner:
    return Planner(load_planner_template(fake_upstream(tmp_path / "upstream")))


def _settings(model: ScriptedModel, name: str) -> ModelSettings:
    return ModelSettings(model=name, base_url=model.base_url, api_key=API_KEY, backoff_initial=0.01)


# -- the texts ----------------------------------------------------------------------------


def test_the_texts_are_read_from_the_checkout(tmp_path: Path) -> None:
    template = load_planner_template(fake_upstream(tmp_path))
    assert template.planner_prompt("P", "T", [{"name": "x"}]) == (
        'PLAN FOR T\nUNDER P\nWITH [\n  {\n    "name": "x"\n  }\n]'
    )
    assert template.executor_message("the task", "the plan") == (
        "TASK:\nthe task\nPLAN:\nthe plan\nGO."
    )
    assert not template.known_revision


def test_without_a_checkout_it_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EOG_UPSTREAM_DIR", raising=False)
    with pytest.raises(UsageError, match="pass --upstream-dir DIR \\(or set EOG_UPSTREAM_DIR\\)"):
        load_planner_template(None)


def test_the_environment_names_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EOG_UPSTREAM_DIR", str(fake_upstream(tmp_path)))
    assert load_planner_template(None).source == str(tmp_path / PLANNER_REACT_FILE)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (None, "orchestrators/planner_react.py is not there"),
        ("def (:\n", "is not Python that can be parsed"),
        ("x = 1\n", "does not hold the planner prompt template"),
        (
            "def _default_prompt_template():\n    return 'a {nope}'\n"
            "enhanced_user_message = f'{plan}'\n",
            "does not format",
        ),
        (
            "def _default_prompt_template():\n    return 'a {tools}'\n"
            "enhanced_user_message = f'{other}'\n",
            "does not hold the executor's plan message",
        ),
    ],
)
def test_a_checkout_without_the_texts_is_one_line(
    tmp_path: Path, source: str | None, says: str
) -> None:
    if source is not None:
        fake_upstream(tmp_path, source)
    with pytest.raises(UsageError, match=says) as raised:
        load_planner_template(tmp_path)
    assert "\n" not in str(raised.value)


def test_another_revision_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = fake_upstream(tmp_path)
    with caplog.at_level(logging.WARNING, logger="eog_core.run.upstream"):
        load_planner_template(folder)
        load_planner_template(folder)
    warnings = [r for r in caplog.records if "is not upstream's file" in r.getMessage()]
    assert len(warnings) == 1 and PLANNER_REACT_SHA256[:12] in warnings[0].getMessage()


# -- the rollout --------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_plan_then_the_loop(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path, api: str
) -> None:
    report = await evaluate(gym, model, tmp_path, api=api, concurrency=1, planner=planner)
    [record] = report.records
    assert (record["status"], record["stop_reason"], record["success"]) == (
        "evaluated",
        "answered",
        True,
    )
    assert record["orchestrator"] == "planner_react" and record["plan"] == PLAN_TEXT
    roles = [turn["role"] for turn in record["turns"]]
    assert roles == ["planner"] + ["executor"] * (len(roles) - 1) and len(roles) > 2
    by_role = record["usage_by_role"]
    assert set(by_role) == {"planner", "executor"}
    assert record["usage"] == {
        k: by_role["planner"][k] + by_role["executor"][k] for k in by_role["planner"]
    }

    first, second = (request["body"] for request in model.requests[:2])
    conversation = "messages" if api == "chat" else "input"
    [ask] = first[conversation]
    assert "tools" not in first and ask["role"] == "user" and ask["content"].startswith("PLAN FOR ")
    shown = json.loads(ask["content"].split("\nWITH ", 1)[1])
    assert [tool["name"] for tool in shown] == [
        t["function"]["name"] if api == "chat" else t["name"] for t in second["tools"]
    ]
    assert {tool["_mcp_server_name"] for tool in shown} == {gym.name}
    assert {tool["_database_id"] for tool in shown} == {""}
    system, user = second[conversation][:2]
    assert system["role"] == "system" and user["role"] == "user"
    assert user["content"].startswith("TASK:\n") and user["content"].endswith(
        f"\nPLAN:\n{PLAN_TEXT}\nGO."
    )
    assert record["executor_user_prompt"] == user["content"]

    [upstream] = list((tmp_path / "upstream").rglob("results_*.json"))
    run = json.loads(upstream.read_text())["runs"][0]
    assert run["generated_plan"] == PLAN_TEXT
    flow_user = run["conversation_flow"][1]
    assert flow_user["generated_plan"] == PLAN_TEXT and flow_user["content"] == user["content"]
    assert all(
        step.get("type") != "ai_message" or step["content"] != PLAN_TEXT
        for step in run["conversation_flow"]
    )
    assert gym.database_ids() == []


async def test_max_turns_bounds_the_executor_only(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    report = await evaluate(gym, model, tmp_path, name="demo-endless", max_turns=3, planner=planner)
    [record] = report.records
    assert record["stop_reason"] == "max_turns"
    assert [t["role"] for t in record["turns"]] == ["planner", "executor", "executor", "executor"]


async def test_an_empty_plan_is_the_no_plan_ending(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    planner.settings = _settings(model, "plan-empty")
    report = await evaluate(gym, model, tmp_path, planner=planner)
    [record] = report.records
    assert (record["status"], record["failure_kind"], record["stop_reason"]) == (
        "incomplete",
        "no_plan",
        "no_plan",
    )
    assert record["attempts"] == 1 and record["plan"] == ""
    assert [t["role"] for t in record["turns"]] == ["planner"]
    assert not list((tmp_path / "upstream").rglob("*.json"))
    assert gym.database_ids() == []


async def test_a_planner_prompt_over_the_window_is_context_overflow(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    planner.settings = _settings(model, "plan-overflow")
    report = await evaluate(gym, model, tmp_path, planner=planner)
    [record] = report.records
    assert (record["status"], record["stop_reason"], record["success"]) == (
        "evaluated",
        "context_overflow",
        False,
    )
    assert record["turns"] == [] and "maximum context length" in record["context_overflow"]


async def test_a_refused_planner_request_is_model_error(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    report = await evaluate(gym, model, tmp_path, preflight=False, planner=planner, concurrency=1)
    assert report.records[0]["success"]
    model.fail_next(status=401, body={"error": {"message": "Incorrect API key provided."}})
    report = await evaluate(
        gym, model, tmp_path / "again", preflight=False, planner=planner, concurrency=1
    )
    [record] = report.records
    assert (record["status"], record["failure_kind"]) == ("incomplete", "model_error")
    assert "tools" not in model.requests[-1]["body"]  # the planner's request was the one refused


async def test_resume_skips_planned_rollouts(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, repeats=2, planner=planner)
    asked = len(model.requests)
    report = await evaluate(gym, model, tmp_path, repeats=2, planner=planner)
    assert len(model.requests) == asked and len(report.records) == 2
    assert {r["plan"] for r in report.records} == {PLAN_TEXT}


# -- score and report show the plan -------------------------------------------------------


async def test_score_shows_the_plans_and_each_role_tokens(
    gym: LocalGym,
    model: ScriptedModel,
    planner: Planner,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = await evaluate(gym, model, tmp_path / "planned", repeats=2, planner=planner)
    await evaluate(gym, model, tmp_path / "react")
    capsys.readouterr()
    assert main(["score", str(tmp_path / "planned")]) == 0
    text = capsys.readouterr().out
    assert "== Orchestrator: planner_react ==" in text
    assert "rollouts planned: 2 (no plan: 0)" in text
    planner_in = sum(r["usage_by_role"]["planner"]["input_tokens"] for r in report.records)
    assert f"tokens: planner {planner_in:,} in / 40 out" in text
    assert text.count(": INTENT: renew the customer's entitlement") == 2

    assert main(["score", str(tmp_path / "planned"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [p["plan"] for p in document["planner"]["plans"]] == [PLAN_TEXT, PLAN_TEXT]

    assert main(["score", str(tmp_path / "react")]) == 0
    assert "Orchestrator" not in capsys.readouterr().out  # a react run prints what it did
    assert main(["score", str(tmp_path / "react"), "--json"]) == 0
    assert "planner" not in json.loads(capsys.readouterr().out)


async def test_the_report_transcript_shows_the_plan_and_the_roles(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "run", planner=planner)
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "-o", str(page), "--n-boot", "50"]) == 0
    [detail] = transcripts(page.read_text(encoding="utf-8"))
    assert detail["orchestrator"] == "planner_react" and detail["plan"] == PLAN_TEXT
    assert detail["executor_user_prompt"].endswith(f"PLAN:\n{PLAN_TEXT}\nGO.")
    roles = [turn["role"] for turn in detail["turns"]]
    assert roles[0] == "planner" and set(roles[1:]) == {"executor"}


async def test_one_folder_one_orchestrator(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "react")
    with pytest.raises(UsageError, match="--orchestrator react, not planner_react"):
        await evaluate(gym, model, tmp_path / "react", repeats=2, planner=planner)
    await evaluate(gym, model, tmp_path / "planned", planner=planner)
    with pytest.raises(UsageError, match="--orchestrator planner_react, not react"):
        await evaluate(gym, model, tmp_path / "planned", repeats=2)


async def test_the_record_names_the_planner(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    planner.settings = _settings(model, "demo-plan")
    [record] = (await evaluate(gym, model, tmp_path, planner=planner)).records
    assert record["planner"]["template_sha256"] == planner.template.sha256
    assert record["planner"]["model"]["model"] == "demo-plan"
    assert API_KEY not in json.dumps(record)
    assert model.requests[0]["body"]["model"] == "demo-plan"
    assert {r["body"]["model"] for r in model.requests[1:]} == {"demo-correct"}


async def test_planner_react_on_ray_is_refused(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="planner_react does not run on Ray yet"):
        await run_evaluation(
            [load_task(demo_paths().task)],
            _settings(model, "demo"),
            tmp_path / "out",
            plan=EvaluationPlan(ray_address="local"),
            options=RolloutOptions(planner=planner),
        )
    assert not (tmp_path / "out").exists()


async def test_a_whitespace_plan_is_no_plan_too(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    model.plans["plan-blank"] = " \n\t"
    planner.settings = _settings(model, "plan-blank")
    [record] = (await evaluate(gym, model, tmp_path, planner=planner)).records
    assert (record["failure_kind"], record["plan"]) == ("no_plan", " \n\t")


async def test_the_planner_turn_keeps_its_token_ids(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    report = await evaluate(gym, model, tmp_path, settings={"token_ids": True}, planner=planner)
    planned = report.records[0]["turns"][0]
    assert planned["role"] == "planner" and planned["token_data"]["token_ids"] == [7, 8, 9]


# -- the scripted model's roles -----------------------------------------------------------


async def _post(model: ScriptedModel, path: str, body: dict[str, object]) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.post(model.base_url + path, json=body) as r:
        assert r.status == 200, await r.text()
        answer: dict[str, Any] = await r.json()
        return answer


async def test_the_scripted_model_tells_the_planner_by_the_request(model: ScriptedModel) -> None:
    plan = await _post(
        model,
        "/chat/completions",
        {"model": "demo", "messages": [{"role": "user", "content": "p"}]},
    )
    assert plan["choices"][0]["message"]["content"] == PLAN_TEXT
    by_name = await _post(
        model,
        "/chat/completions",
        {"model": "plan-empty", "messages": [{"role": "system", "content": "s"}]},
    )
    assert by_name["choices"][0]["message"]["content"] == ""
    executor = await _post(
        model,
        "/chat/completions",
        {
            "model": "demo",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "tools": [{"type": "function", "function": {"name": "x", "parameters": {}}}],
        },
    )
    assert executor["choices"][0]["message"]["tool_calls"]


async def test_responses_input_messages_with_their_type_are_not_answers(
    model: ScriptedModel,
) -> None:
    """LangChain writes ``type: "message"`` on the system and user items; they are not turns
    the model played (the first answer is still the script's first turn)."""
    items = [
        {"type": "message", "role": "system", "content": "s"},
        {"type": "message", "role": "user", "content": "u"},
    ]
    tools = [{"type": "function", "name": "x", "parameters": {}}]
    answer = await _post(model, "/responses", {"model": "demo", "input": items, "tools": tools})
    calls = [i["call_id"] for i in answer["output"] if i["type"] == "function_call"]
    assert calls == ["call_t1_0", "call_t1_1"]


async def test_the_planner_sees_each_listed_tool_whole(
    gym: LocalGym, model: ScriptedModel, planner: Planner, tmp_path: Path
) -> None:
    """Real gyms list tools with ``title``, ``annotations``, ``meta``...: upstream's planner
    prompt dumps the entry as listed, every key in its order, and so does ours."""
    listed = [
        {"title": tool["name"].title(), **tool, "annotations": {"readOnlyHint": True}}
        for tool in build_demo_tools().describe()
    ]
    snapshot = tmp_path / "tools" / "demo.json"
    snapshot.parent.mkdir()
    snapshot.write_text(json.dumps({"gym_name": DEMO_SERVER_NAME, "tools": listed}))
    await evaluate(
        gym,
        model,
        tmp_path / "run",
        planner=planner,
        tool_snapshots=load_tool_snapshots(snapshot.parent),
    )
    [ask] = model.requests[0]["body"]["messages"]
    shown = json.loads(ask["content"].split("\nWITH ", 1)[1])
    by_name = {tool["name"]: tool for tool in listed}  # the task selects some of them
    assert len(shown) > 1
    for tool in shown:
        mine = by_name[tool["name"]]
        assert list(tool) == [*mine, "_mcp_server_name", "_mcp_server_url", "_database_id"]
        assert {k: v for k, v in tool.items() if not k.startswith("_")} == mine
