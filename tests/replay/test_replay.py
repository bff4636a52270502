"""``eog-core replay``: a run's tool calls again into fresh LocalGyms, compared."""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from eog_core.cli import main
from eog_core.local import LocalGym, demo_paths
from eog_core.local.demo import build_demo_tools
from eog_core.replay import REPLAY_FILE
from tests.run.conftest import evaluate
from tests.run.scripted_model import ScriptedModel

PATHS = demo_paths()
COMMENT_ON_NEW_CASE = {  # uses the id create_case generated
    "name": "add_case_comment",
    "arguments": {"case_id": "case_007", "body": "Opened for Kenji."},
}


async def make_run(out: Path, *, script: str = "demo-correct", capture_state: bool = True) -> None:
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        correct = model.scripts["demo-correct"]
        model.scripts["demo-comment-new"] = [*correct[:5], [COMMENT_ON_NEW_CASE], *correct[5:]]
        await evaluate(gym, model, out, name=script, capture_state=capture_state, repeats=2)


async def replay(gym: LocalGym, run: Path, out: Path, *extra: str) -> int:
    argv = ["replay", str(run), "--tasks", str(PATHS.task), "--gym", f"{gym.name}={gym.url}"]
    return await asyncio.to_thread(main, [*argv, "--out", str(out), *extra])


def renumbering_gym() -> LocalGym:
    """The demo gym, except that create_case gives the new case the sys_id ``case_9NN``."""
    tools = build_demo_tools()
    spec = tools.get("create_case")
    assert spec is not None
    original = spec.function

    @functools.wraps(original)
    def create_case(ctx: Any, **arguments: Any) -> Any:
        case = original(ctx, **arguments)
        renamed = "case_9" + case["sys_id"][6:]
        ctx.connection.execute(
            'UPDATE "case" SET sys_id = ? WHERE sys_id = ?', (renamed, case["sys_id"])
        )
        return dict(case, sys_id=renamed)

    tools._tools["create_case"] = type(spec)(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        function=create_case,
        title=spec.title,
    )
    return LocalGym(name="demo-csm-server", tools=tools)


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / REPLAY_FILE).read_text())
    return data


async def test_a_replay_into_a_fresh_gym_reproduces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, out = tmp_path / "run", tmp_path / "replay"
    await make_run(run)
    async with LocalGym.demo() as gym:
        code = await replay(gym, run, out, "--seed-root", str(PATHS.directory))
        assert gym.database_ids() == []  # nothing left on the gym
    assert code == 0, capsys.readouterr().err
    assert "2 of 2 rollout(s) reproduced" in capsys.readouterr().out
    written = report(out)
    assert written["all_reproduced"] is True and written["replayed"] == 2
    for rollout in written["rollouts"]:
        assert rollout["outputs"] == {"calls": 9, "identical": 9}
        assert rollout["states"] == "equal"  # timestamps masked: the tools stamp 'now'
        assert rollout["verdicts"]["strict"] == {
            "recorded": "pass",
            "replayed": "pass",
            "agree": True,
        }
    # the report shows it
    html = tmp_path / "report.html"
    argv = ["report", str(run), "--replay", str(out), "-o", str(html)]
    assert await asyncio.to_thread(main, argv) == 0
    page = html.read_text()
    assert 'id="replay-table"' in page and page.count('data-reproduced="yes"') == 2
    assert 'data-value="2,2"' in page
    other = tmp_path / "other.json"
    other.write_text('{"format": "something else"}')
    assert await asyncio.to_thread(main, [*argv[:3], str(other), "-o", str(html)]) == 2
    assert "is not an eog_core.replay/1 result" in capsys.readouterr().err


async def test_ids_the_gym_generates_differently_are_remapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replay's gym calls the new case case_907; the recorded comment on case_007 goes
    to case_907, and the outputs and the final state compare equal with the ids mapped."""
    run, out = tmp_path / "run", tmp_path / "replay"
    await make_run(run, script="demo-comment-new")
    async with renumbering_gym() as gym:
        code = await replay(gym, run, out, "--seed-root", str(PATHS.directory), "--json")
        assert gym.database_ids() == []
    printed = json.loads(capsys.readouterr().out)
    assert code == 0, printed
    for rollout in printed["rollouts"]:
        assert rollout["ids"] == {"case_007": "case_907"}
        assert rollout["outputs"] == {"calls": 10, "identical": 10}
        assert rollout["states"] == "equal"


async def test_a_gym_seeded_differently_does_not_reproduce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, out, seeds = tmp_path / "run", tmp_path / "replay", tmp_path / "seeds"
    await make_run(run)
    shutil.copytree(PATHS.directory, seeds)
    seed = seeds / "seed.sql"
    changed = seed.read_text().replace(
        "'Harbor Lane Robotics', 'manufacturing', 'gold'",
        "'Harbor Lane Robotics', 'manufacturing', 'silver'",
    )
    assert changed != seed.read_text()
    seed.write_text(changed)
    async with LocalGym.demo() as gym:
        code = await replay(gym, run, out, "--seed-root", str(seeds))
        assert gym.database_ids() == []
    printed = capsys.readouterr().out
    assert code == 1
    assert "0 of 2 rollout(s) reproduced" in printed
    [first, _] = report(out)["rollouts"]
    assert first["reproduced"] is False and first["states"] == "differ"
    assert first["outputs"]["identical"] < first["outputs"]["calls"]
    assert any("silver" in d for d in first["output_differences"])
    assert any(
        d.startswith("before: demo-csm-server.account modified") for d in first["state_differences"]
    )


async def test_an_unreachable_gym_is_exit_3_and_bad_input_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, out = tmp_path / "run", tmp_path / "replay"
    await make_run(run, capture_state=False)
    argv = ["replay", str(run), "--tasks", str(PATHS.task), "--seed-root", str(PATHS.directory)]
    dead = [
        *argv,
        "--gym",
        "demo-csm-server=http://127.0.0.1:9",
        "--timeout",
        "2",
        "--out",
        str(out),
    ]
    assert await asyncio.to_thread(main, dead) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not complete" in err[0]
    cases = [
        (["replay", str(tmp_path / "nothing"), "--tasks", str(PATHS.task)], "is not a run folder"),
        ([*argv, "--gym", "other=http://127.0.0.1:9"], "--gym other: no task uses that gym"),
        (
            ["replay", str(run), "--tasks", str(PATHS.task), "--seed-root", str(tmp_path / "no")],
            "is not a folder",
        ),
        ([*argv[:3], str(tmp_path / "missing.json")], "no such file or folder"),
        ([*argv, "--max-lifecycles", "3"], "--max-lifecycles takes a positive number and needs"),
        (
            [
                *argv[:4],
                "--seed-root",
                str(tmp_path),
                "--gym",
                "demo-csm-server=http://127.0.0.1:9",
            ],
            "seed file for gym 'demo-csm-server' not found",
        ),
    ]
    for words, message in cases:
        assert await asyncio.to_thread(main, [*words, "--out", str(out)]) == 2, words
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert not out.exists()
