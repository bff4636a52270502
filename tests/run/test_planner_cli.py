"""``eog-core run --orchestrator planner_react`` as a user runs it: ``eog-core serve-model`` in
one process, ``eog-core run`` in another, the demo gym on loopback; refusals in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from eog_core.cli import main
from eog_core.local import PLAN_TEXT, LocalGym
from tests.run.planner_upstream import fake_upstream
from tests.run.scripted_model import ScriptedModel
from tests.run.test_run_cli import command, finish, one_line, records, serve_model, spawn


@pytest.mark.parametrize(
    ("orchestrator", "reads"),
    [("planner_react", "upstream's planner prompt"), ("decomposing", "upstream's prompts")],
)
def test_a_planner_orchestrator_without_a_checkout_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    orchestrator: str,
    reads: str,
) -> None:
    monkeypatch.delenv("EOG_UPSTREAM_DIR", raising=False)
    argv = ["run", "t.json", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    argv += ["--orchestrator", orchestrator, "--out", str(tmp_path / "out")]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert one_line(err).endswith(
        f"--orchestrator {orchestrator} reads {reads}: pass --upstream-dir DIR (or set "
        "EOG_UPSTREAM_DIR) naming a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3"
    )
    assert not (tmp_path / "out").exists()


def test_a_planner_flag_without_planner_react_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "t.json", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    argv += ["--planner-model", "p", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert one_line(err).endswith(
        "--planner-model needs --orchestrator planner_react or decomposing"
    )


async def test_serve_model_and_run_planner_react_offline(gym: LocalGym, tmp_path: Path) -> None:
    """The two commands of docs/run.md's offline try, with an upstream checkout."""
    upstream = fake_upstream(tmp_path / "upstream")
    async with serve_model() as base_url:
        async with ScriptedModel() as unused:  # command() wants a model; its URL is replaced
            argv = command(gym, unused, tmp_path / "planned", name="demo")
        argv[argv.index("--base-url") + 1] = base_url
        planned = [*argv, "--orchestrator", "planner_react", "--upstream-dir", str(upstream)]
        code, _, stderr = await finish(await spawn([*planned, "--repeats", "2"]))
        assert code == 0, stderr
        assert [(r["success"], r["plan"]) for r in records(tmp_path / "planned")] == [
            (True, PLAN_TEXT),
            (True, PLAN_TEXT),
        ]

        empty = [*planned, "--planner-model", "plan-empty"]
        empty[empty.index("--out") + 1] = str(tmp_path / "empty")
        code, _, stderr = await finish(await spawn(empty))
        assert code == 3, stderr
        [record] = records(tmp_path / "empty")
        assert (record["failure_kind"], record["stop_reason"]) == ("no_plan", "no_plan")
    assert gym.database_ids() == []
