"""``eog-core rescore``: revised verifiers on a run's captured final states, no gym running."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.cli import main
from eog_core.local import LocalGym, demo_paths
from eog_core.metrics import read_run
from eog_core.replay import RESCORE_FILE
from eog_core.report import load_run
from eog_core.run import ROLLOUTS_FILE
from tests.run.conftest import evaluate
from tests.run.scripted_model import ScriptedModel

TASK = demo_paths().task


async def make_run(out: Path, *, capture_state: bool = True, repeats: int = 2) -> None:
    """A run of the demo task by the scripted model; the gym is gone when it returns."""
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        await evaluate(gym, model, out, capture_state=capture_state, repeats=repeats)


def revised(folder: Path, **expected: Any) -> Path:
    """The demo task with some verifiers' expected values changed, as a task file."""
    task = json.loads(TASK.read_text())
    for verifier in task["verifiers"]:
        if verifier["name"] in expected:
            verifier["validation_config"]["expected_value"] = expected[verifier["name"]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TASK.name
    path.write_text(json.dumps(task))
    return path


async def rescore(*argv: str) -> int:
    """``eog-core rescore`` in-process (its own event loop, in a thread)."""
    return await asyncio.to_thread(main, ["rescore", *argv])


def hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / ROLLOUTS_FILE).read_text().splitlines()]


async def test_a_revised_verifier_flips_the_verdict_in_both_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, new = tmp_path / "run", tmp_path / "new"
    await make_run(run)
    task = revised(tmp_path / "revised", entitlement_renewed="active until 2027-07-31")
    code = await rescore(str(run), "--tasks", str(task), "--out", str(new), "--json")
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rescored"] == 2
    for policy in ("strict", "parity"):
        flips = summary["flips"][policy]
        assert [(f["repeat"], f["before"], f["after"]) for f in flips] == [
            (0, "pass", "fail"),
            (1, "pass", "fail"),
        ]
    fresh = records(new)
    assert [r["success"] for r in fresh] == [False, False]
    assert [r["parity"]["success"] for r in fresh] == [False, False]
    source = records(run)
    for old, rescored in zip(source, fresh, strict=True):
        assert rescored["turns"] == old["turns"]  # the transcript is the run's
        provenance = rescored["rescore"]
        assert provenance["state"] == old["state"]["after"]
        assert provenance["task_sha256_before"] is None
        assert len(provenance["task_sha256_after"]) == 64
        assert (new / "states" / f"{old['state']['after']}.json.gz").is_file()
    written = json.loads((new / RESCORE_FILE).read_text())
    assert written["tasks"]["demo_csm_fleet_renewal"]["task_sha256_before"] is None
    # the new folder is a run folder like any other, and can be re-scored in turn
    assert [v.success for v in read_run(new)] == [False, False]
    assert len(load_run(new).records) == 2
    again = tmp_path / "again"
    assert await rescore(str(new), "--tasks", str(TASK), "--out", str(again), "--json") == 0
    second = json.loads(capsys.readouterr().out)
    entry = second["tasks"]["demo_csm_fleet_renewal"]
    assert entry["task_sha256_before"] == fresh[0]["rescore"]["task_sha256_after"]
    assert [f["after"] for f in second["flips"]["strict"]] == ["pass", "pass"]


async def test_the_same_tasks_rescore_to_the_same_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Also the verifier that reads ``julianday('now')``: 'now' is the rollout's end."""
    run, new = tmp_path / "run", tmp_path / "new"
    await make_run(run)
    assert await rescore(str(run), "--tasks", str(TASK), "--out", str(new)) == 0
    out = capsys.readouterr().out
    assert "strict: no verdict flips" in out and "parity: no verdict flips" in out
    for old, fresh in zip(records(run), records(new), strict=True):
        assert (fresh["success"], fresh["pass_rate"]) == (old["success"], old["pass_rate"])
        assert fresh["parity"]["pass_rate"] == old["parity"]["pass_rate"]


async def test_a_run_without_captured_states_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, new = tmp_path / "run", tmp_path / "new"
    await make_run(run, capture_state=False, repeats=1)
    assert await rescore(str(run), "--tasks", str(TASK), "--out", str(new)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rerun it with --capture-state" in err[0]
    assert not new.exists()


async def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    await make_run(run, repeats=1)
    other = revised(tmp_path / "other")
    body = json.loads(other.read_text())
    (tmp_path / "other" / TASK.name).unlink()
    (tmp_path / "other" / "task_other.json").write_text(json.dumps(body | {"task_id": "x"}))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    cases = [
        ([str(tmp_path / "nothing"), "--tasks", str(TASK)], "is not a run folder"),
        ([str(run), "--tasks", str(tmp_path / "other")], "none of the tasks of --tasks is in"),
        ([str(run), "--tasks", str(tmp_path / "missing.json")], "no such file or folder"),
        ([str(run), "--tasks", str(broken)], "--tasks: "),
    ]
    for argv, message in cases:
        assert await rescore(*argv, "--out", str(tmp_path / "new")) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert await rescore(str(run), "--tasks", str(TASK), "--out", str(taken)) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (taken / "keep.txt").read_text() == "mine"
    assert await rescore(str(run), "--tasks", str(TASK), "--out", str(run)) == 2
    assert not (tmp_path / "new").exists()
    assert hidden(tmp_path) == []  # no half-built folder left


async def test_run_tasks_missing_from_tasks_are_left_out_and_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two tasks ran; only one is given: the other's rollouts are left out, not carried."""
    body = json.loads(TASK.read_text())
    second = tmp_path / "tasks" / "second.json"
    second.parent.mkdir()
    second.write_text(json.dumps(body | {"task_id": "second_copy"}))
    first = tmp_path / "tasks" / TASK.name
    first.write_text(TASK.read_text())
    run, new = tmp_path / "run", tmp_path / "new"
    from eog_core import load_task

    async with LocalGym.demo() as gym, ScriptedModel() as model:
        await evaluate(
            gym, model, run, capture_state=True, tasks=[load_task(first), load_task(second)]
        )
    assert await rescore(str(run), "--tasks", str(first), "--out", str(new), "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["left_out"]["not_in_tasks"] == ["second_copy"]
    assert {r["task_id"] for r in records(new)} == {"demo_csm_fleet_renewal"}


async def test_now_is_the_rollouts_end_not_the_clock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record that says it ended three days after its case was touched fails the
    'touched within the last day' verifier when re-scored: 'now' is ``finished_at``."""
    run, new = tmp_path / "run", tmp_path / "new"
    await make_run(run, repeats=1)
    [record] = records(run)
    record["finished_at"] = "2099-01-04T00:00:00.000+00:00"
    (run / ROLLOUTS_FILE).write_text(json.dumps(record) + "\n")
    assert await rescore(str(run), "--tasks", str(TASK), "--out", str(new)) == 0
    [fresh] = records(new)
    failed = [r["name"] for r in fresh["results"] if not r["passed"]]
    assert failed == ["login_case_touched_recently"]


async def test_parity_reads_the_state_through_the_gyms_limit_100_and_strict_reads_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, new = tmp_path / "run", tmp_path / "new"
    await make_run(run, repeats=1)
    task = json.loads(TASK.read_text())
    listing = next(v for v in task["verifiers"] if v["name"] == "entitlement_renewed")
    listing["validation_config"] = {
        "query": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 150) "
        "SELECT x FROM n",
        "expected_value": [{"x": x} for x in range(1, 151)],
        "comparison_type": "equals",
    }
    path = tmp_path / "revised" / TASK.name
    path.parent.mkdir()
    path.write_text(json.dumps(task))
    assert await rescore(str(run), "--tasks", str(path), "--out", str(new), "--json") == 0
    capsys.readouterr()
    (fresh,) = records(new)
    assert fresh["success"] is True  # strict: all 150 rows, as listed
    assert fresh["parity"]["success"] is False  # upstream's gym would have answered 100
