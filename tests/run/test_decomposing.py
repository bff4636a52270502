"""``decomposing``: upstream's texts read from a checkout, the decomposition, a sub-agent per
subtask with the working memory, the composed answer; its endings.

Against the demo gym and the scripted model on loopback; the texts come from a stand-in
file of upstream's shape (``tests/run/decomposing_upstream.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from eog_core import load_task
from eog_core.cli import main
from eog_core.errors import UsageError
from eog_core.local import DECOMPOSITION, FINAL_TEXT, LocalGym, demo_paths
from eog_core.run import (
    DECOMPOSING_SHA256,
    Decomposer,
    EvaluationPlan,
    ModelSettings,
    RolloutOptions,
    load_decomposing_template,
    run_evaluation,
)
from eog_core.run._decomposing_source import DECOMPOSING_FILE
from eog_core.run._decomposition import extract_json, parse_decomposition
from tests.report.page import transcripts
from tests.run.conftest import API_KEY, evaluate
from tests.run.decomposing_upstream import SOURCE, fake_upstream
from tests.run.scripted_model import ModelFault, ScriptedModel


@pytest.fixture
def decomposer(tmp_path: Path) -> Decomposer:
    template = load_decomposing_template(fake_upstream(tmp_path / "upstream"))
    return Decomposer(template, retry_delay=0.01)


def _settings(model: ScriptedModel, name: str) -> ModelSettings:
    return ModelSettings(model=name, base_url=model.base_url, api_key=API_KEY, backoff_initial=0.01)


# -- the texts ----------------------------------------------------------------------------


def test_the_texts_and_caps_are_read_from_the_checkout(tmp_path: Path) -> None:
    template = load_decomposing_template(fake_upstream(tmp_path))
    assert (template.max_subtask_turns, template.planner_attempts) == (25, 3)
    assert template.memory_empty == "MEMORY: none"
    assert not template.known_revision
    found = parse_decomposition(json.dumps(DECOMPOSITION), template)
    assert (
        found.plan == f"PLAN {DECOMPOSITION['strategic_plan']} BECAUSE {DECOMPOSITION['rationale']}"
    )
    assert [s["id"] for s in found.subtasks] == [1, 2, 3]


def test_without_a_checkout_it_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EOG_UPSTREAM_DIR", raising=False)
    with pytest.raises(
        UsageError, match="decomposing reads upstream's prompts: pass --upstream-dir"
    ):
        load_decomposing_template(None)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (None, "orchestrators/decomposing_planner.py is not there"),
        ("def (:\n", "is not Python that can be parsed"),
        ("x = 1\n", "does not hold upstream's decomposition template"),
        (SOURCE.replace("{tools}", "{gadgets}"), "the decomposition template does not format"),
        (SOURCE.replace("extraction_prompt = f", "extraction = f"), "extraction_prompt text"),
        (SOURCE.replace("{memory_context}", "{memory_context.upper()}"), "memory_context.upper()"),
        (SOURCE.replace("max_iterations: int = 25", "max_iterations=None"), "upstream's caps"),
    ],
)
def test_a_checkout_without_the_texts_is_one_line(
    tmp_path: Path, source: str | None, says: str
) -> None:
    if source is not None:
        fake_upstream(tmp_path, source)
    with pytest.raises(UsageError, match=says) as raised:
        load_decomposing_template(tmp_path)
    assert "\n" not in str(raised.value)


def test_another_revision_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = fake_upstream(tmp_path)
    with caplog.at_level(logging.WARNING, logger="eog_core.run.upstream"):
        load_decomposing_template(folder)
        load_decomposing_template(folder)
    warnings = [r for r in caplog.records if "is not upstream's file" in r.getMessage()]
    assert len(warnings) == 1 and DECOMPOSING_SHA256[:12] in warnings[0].getMessage()
    assert warnings[0].getMessage().startswith(str(tmp_path / DECOMPOSING_FILE))


@pytest.mark.parametrize(
    ("answer", "cut"),
    [
        ('Sure:\n```json\n{"a": 1}\n```\nbye', '{"a": 1}'),
        ('```\n{"a": 2}\n```', '{"a": 2}'),
        ('I think {"a": 3} is it', '{"a": 3}'),
        ('  {"a": 4}  ', '{"a": 4}'),
        ('```json\n{"a": 5}', '{"a": 5}'),  # an open fence: from the first { to the last }
    ],
)
def test_the_json_is_cut_out_as_upstream_cuts_it(answer: str, cut: str) -> None:
    assert extract_json(answer) == cut


def test_an_answer_without_json_has_none() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("no braces here")


# -- the rollout --------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_decompose_run_each_subtask_then_compose(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path, api: str
) -> None:
    report = await evaluate(gym, model, tmp_path, name="demo", api=api, planner=decomposer)
    [record] = report.records
    assert (record["status"], record["stop_reason"], record["success"]) == (
        "evaluated",
        "answered",
        True,
    )
    roles = [t["role"] for t in record["turns"]]
    assert roles == ["planner"] + ["sub-agent 1"] * 5 + ["sub-agent 2"] * 4 + ["sub-agent 3"] * 4
    assert [t["turn"] for t in record["turns"]] == list(range(1, 15))
    assert [t.get("memory_extraction", False) for t in record["turns"]].count(True) == 3
    assert set(record["usage_by_role"]) == {"planner", "sub-agent 1", "sub-agent 2", "sub-agent 3"}
    for key in ("input_tokens", "output_tokens"):
        assert sum(u[key] for u in record["usage_by_role"].values()) == record["usage"][key]
    decomposition = record["decomposition"]
    assert [s["title"] for s in decomposition["subtasks"]] == [
        s["title"] for s in DECOMPOSITION["subtasks"]
    ]
    assert [r["stop_reason"] for r in decomposition["results"]] == ["answered"] * 3
    assert decomposition["working_memory"] == {
        "account_id": "acc_001",
        "entitlement_id": "ent_002",
        "case_contact_id": "con_002",
    }
    assert decomposition["results"][2]["memory_error"] == "no JSON object in the answer"
    assert record["final_answer"].startswith("SUMMARY\n[+] 1 Renew the entitlement [part 1]")
    assert record["final_answer"].endswith(f"LAST {FINAL_TEXT}")
    assert record["plan"].startswith("PLAN Renew the entitlement")
    assert "executor_user_prompt" not in record
    assert gym.database_ids() == []


async def test_each_sub_agent_sees_the_memory_so_far(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo", planner=decomposer, concurrency=1)
    firsts = [
        r["body"]["messages"][1]["content"]
        for r in model.requests
        if r["body"].get("tools") and len(r["body"]["messages"]) == 2
    ]
    assert len(firsts) == 3
    assert "MEMORY: none" in firsts[0]
    assert '"account_id": "acc_001"' in firsts[1] and "case_contact_id" not in firsts[1]
    assert '"case_contact_id": "con_002"' in firsts[2]
    questions = [r["body"] for r in model.requests if r["body"]["messages"][-1]["role"] == "user"]
    memory = [q for q in questions if len(q["messages"]) > 2]
    assert len(memory) == 3 and all("tools" not in q for q in memory)
    assert memory[0]["messages"][-1]["content"].count("> ") == 4  # one line per call


async def test_the_upstream_file_has_the_orchestration(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    [record] = (await evaluate(gym, model, tmp_path, name="demo", planner=decomposer)).records
    [path] = (tmp_path / "upstream").rglob("*.json")
    [run] = json.loads(path.read_text(encoding="utf-8"))["runs"]
    kinds = [step["type"] for step in run["conversation_flow"]]
    assert kinds[:4] == ["system_message", "user_message", "meta_agent_plan", "subtask_start"]
    assert kinds.count("subtask_complete") == 3 and kinds.count("ai_message") == 10
    metadata = run["orchestration_metadata"]
    assert metadata["num_subtasks"] == 3 and metadata["overall_success"]
    assert metadata["working_memory"] == record["decomposition"]["working_memory"]
    breakdown = run["usage"]["breakdown"]
    assert set(breakdown["subtasks"]) == {"subtask_1", "subtask_2", "subtask_3"}
    assert run["usage"]["total"]["input_tokens"] == record["usage"]["input_tokens"]
    assert run["model_response"] == record["final_answer"]


async def test_max_turns_bounds_each_sub_agent(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    report = await evaluate(gym, model, tmp_path, name="demo", max_turns=2, planner=decomposer)
    [record] = report.records
    results = record["decomposition"]["results"]
    assert [r["stop_reason"] for r in results] == ["max_turns"] * 3
    acting = [
        t for t in record["turns"] if t["role"] != "planner" and not t.get("memory_extraction")
    ]
    assert len(acting) == 6
    assert record["stop_reason"] == "answered" and not record["success"]


@pytest.mark.parametrize("answer", ["plan-no-json", "plan-forward", "plan-wrong-types"])
async def test_no_decomposition_after_upstream_s_attempts_is_bad_decomposition(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path, answer: str
) -> None:
    decomposer.settings = _settings(model, answer)
    report = await evaluate(gym, model, tmp_path, planner=decomposer)
    [record] = report.records
    assert (record["status"], record["failure_kind"], record["stop_reason"]) == (
        "incomplete",
        "bad_decomposition",
        "bad_decomposition",
    )
    assert record["attempts"] == 1 and record["plan"] is None
    assert [t["role"] for t in record["turns"]] == ["planner"] * 3
    assert all(t["decomposition_error"] for t in record["turns"])
    assert len(record["decomposition"]["errors"]) == 3
    assert "held a decomposition" in record["failure_reason"]
    assert not list((tmp_path / "upstream").rglob("*.json"))
    assert gym.database_ids() == []


async def test_a_planner_prompt_over_the_window_is_context_overflow(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    decomposer.settings = _settings(model, "plan-overflow")
    [record] = (await evaluate(gym, model, tmp_path, planner=decomposer)).records
    assert (record["status"], record["stop_reason"], record["success"]) == (
        "evaluated",
        "context_overflow",
        False,
    )
    assert record["turns"] == [] and "maximum context length" in record["context_overflow"]


async def test_a_sub_agent_over_the_window_fails_its_subtask_and_the_next_runs(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    [record] = (
        await evaluate(gym, model, tmp_path, name="demo-overflow", planner=decomposer)
    ).records
    assert (record["status"], record["stop_reason"]) == ("evaluated", "answered")
    results = record["decomposition"]["results"]
    assert [(r["success"], r["stop_reason"]) for r in results] == [(False, "context_overflow")] * 3
    assert all("maximum context length" in r["error"] for r in results)
    assert record["final_answer"].count("\n  ERROR ") == 3
    assert results[0]["summary"] == f"FAILED: {results[0]['error']}"
    assert not any(t.get("memory_extraction") for t in record["turns"])


async def test_a_refused_sub_agent_request_is_model_error(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    """Upstream fails the subtask and goes on; a refused request is no answer of the model's:
    the rollout is incomplete, as with the other orchestrators."""
    model.scripts["demo#2"] = [ModelFault(status=404, body={"error": {"message": "gone"}})]
    [record] = (await evaluate(gym, model, tmp_path, name="demo", planner=decomposer)).records
    assert (record["status"], record["failure_kind"]) == ("incomplete", "model_error")
    assert model.requests[-1]["body"]["messages"][1]["content"].startswith("DO Open the case")
    assert gym.database_ids() == []


async def test_resume_skips_decomposed_rollouts(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, name="demo", repeats=2, planner=decomposer)
    asked = len(model.requests)
    report = await evaluate(gym, model, tmp_path, name="demo", repeats=2, planner=decomposer)
    assert len(model.requests) == asked and len(report.records) == 2
    assert {r["orchestrator"] for r in report.records} == {"decomposing"}


async def test_one_folder_one_orchestrator(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "react")
    with pytest.raises(UsageError, match="--orchestrator react, not decomposing"):
        await evaluate(gym, model, tmp_path / "react", repeats=2, planner=decomposer)


async def test_the_record_names_the_planner(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    decomposer.settings = _settings(model, "demo-decomposition")
    [record] = (await evaluate(gym, model, tmp_path, name="demo", planner=decomposer)).records
    assert record["orchestrator"] == "decomposing" and record["success"]
    assert record["planner"]["template_sha256"] == decomposer.template.sha256
    assert record["planner"]["model"]["model"] == "demo-decomposition"
    assert API_KEY not in json.dumps(record)
    assert model.requests[0]["body"]["model"] == "demo-decomposition"
    assert {r["body"]["model"] for r in model.requests[1:]} == {"demo"}


async def test_decomposing_on_ray_is_refused(
    model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="decomposing does not run on Ray yet"):
        await run_evaluation(
            [load_task(demo_paths().task)],
            _settings(model, "demo"),
            tmp_path / "out",
            plan=EvaluationPlan(ray_address="local"),
            options=RolloutOptions(planner=decomposer),
        )
    assert not (tmp_path / "out").exists()


# -- score and report show the decomposition ----------------------------------------------


async def test_score_shows_the_subtasks_and_each_role_tokens(
    gym: LocalGym,
    model: ScriptedModel,
    decomposer: Decomposer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = await evaluate(
        gym, model, tmp_path / "run", name="demo", repeats=2, planner=decomposer
    )
    capsys.readouterr()
    assert main(["score", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert "== Orchestrator: decomposing ==" in text
    assert "rollouts decomposed: 2 (no decomposition: 0); subtasks run: 6, succeeded: 6" in text
    planner_in = sum(r["usage_by_role"]["planner"]["input_tokens"] for r in report.records)
    sub_in, sub_out = (
        sum(
            u[key]
            for r in report.records
            for role, u in r["usage_by_role"].items()
            if role.startswith("sub-agent ")
        )
        for key in ("input_tokens", "output_tokens")
    )
    assert (
        f"tokens: planner {planner_in:,} in / 40 out; sub-agents {sub_in:,} in / {sub_out:,} out"
        in text
    )
    assert text.count(": PLAN Renew the entitlement") == 2
    assert "rollouts planned" not in text

    assert main(["score", str(tmp_path / "run"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)["planner"]
    assert document["subtasks"] == {"run": 6, "succeeded": 6}
    assert document["tokens"]["sub-agents"]["output_tokens"] == sub_out
    assert document["bad_decomposition"] == 0


async def test_score_counts_the_rollouts_without_a_decomposition(
    gym: LocalGym,
    model: ScriptedModel,
    decomposer: Decomposer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await evaluate(gym, model, tmp_path / "run", name="demo", planner=decomposer)
    decomposer.settings = _settings(model, "plan-no-json")
    await evaluate(gym, model, tmp_path / "run", name="demo", repeats=2, planner=decomposer)
    capsys.readouterr()
    main(["score", str(tmp_path / "run")])
    text = capsys.readouterr().out
    assert "rollouts decomposed: 2 (no decomposition: 1); subtasks run: 3, succeeded: 3" in text
    assert ": (no plan)" in text


async def test_the_report_shows_the_subtasks_and_each_sub_agent_s_turns(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path / "run", name="demo", planner=decomposer)
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "-o", str(page), "--n-boot", "50"]) == 0
    [detail] = transcripts(page.read_text(encoding="utf-8"))
    assert detail["orchestrator"] == "decomposing" and detail["plan"].startswith("PLAN Renew")
    assert [s["title"] for s in detail["subtasks"]] == [
        s["title"] for s in DECOMPOSITION["subtasks"]
    ]
    assert [(s["success"], s["stop_reason"]) for s in detail["subtasks"]] == [
        (True, "answered")
    ] * 3
    assert detail["subtasks"][0]["memory"] == {"account_id": "acc_001", "entitlement_id": "ent_002"}
    assert detail["working_memory"]["case_contact_id"] == "con_002"
    turns = detail["turns"]
    assert [t["role"] for t in turns][:2] == ["planner", "sub-agent 1"]
    assert {t["subtask"] for t in turns if t["role"] == "sub-agent 2"} == {2}
    assert sum(t.get("memory_extraction", False) for t in turns) == 3


async def test_the_report_says_why_there_was_no_decomposition(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    decomposer.settings = _settings(model, "plan-forward")
    await evaluate(gym, model, tmp_path / "run", planner=decomposer)
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "-o", str(page), "--n-boot", "50"]) == 0
    [detail] = transcripts(page.read_text(encoding="utf-8"))
    assert detail["subtasks"] == [] and len(detail["decomposition_errors"]) == 3
    assert "depends on 2, not a subtask" in detail["decomposition_errors"][0]


async def test_a_decomposed_run_replays_and_rescores(
    gym: LocalGym, model: ScriptedModel, decomposer: Decomposer, tmp_path: Path
) -> None:
    """Every sub-agent's calls are in the record, in order: ``replay`` reproduces the run,
    ``rescore`` re-verifies its captured states."""
    run = tmp_path / "run"
    await evaluate(gym, model, run, name="demo", planner=decomposer, capture_state=True)
    task, seeds = str(demo_paths().task), str(demo_paths().directory)
    replay = ["replay", str(run), "--tasks", task, "--gym", f"{gym.name}={gym.url}"]
    replay += ["--seed-root", seeds, "--out", str(tmp_path / "replay")]
    assert await asyncio.to_thread(main, replay) == 0
    document = json.loads((tmp_path / "replay" / "replay.json").read_text(encoding="utf-8"))
    assert document["all_reproduced"]
    assert document["rollouts"][0]["outputs"] == {"calls": 9, "identical": 9}
    rescore = ["rescore", str(run), "--tasks", task, "--out", str(tmp_path / "rescored")]
    assert await asyncio.to_thread(main, rescore) == 0
