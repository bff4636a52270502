"""``--domain``/``--mode``: a typo is refused naming the dataset's domains, an empty selection said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eog_core.cli import main
from tests.datasets import EXAMPLES

TASKS = EXAMPLES / "tasks"
EIGHT = "calendar, csm, drive, email, hr, itsm, teams, hybrid"


@pytest.mark.parametrize("command", ["validate", "convert", "run"])
def test_an_unknown_domain_is_refused_naming_the_dataset_s_eight(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, str(TASKS), "--domain", "cms"]
    if command == "convert":
        argv += ["--tools", str(EXAMPLES / "tools"), "-o", str(tmp_path / "rows.jsonl")]
    if command == "run":  # refused before any model or gym is asked
        argv += ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"eog-core {command}: "
        + ("error: " if command == "run" else "")
        + f"--domain cms: unknown domain; the dataset's domains are {EIGHT}"
    ]


def test_a_known_domain_that_selects_nothing_says_what_the_tasks_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", str(TASKS), "--domain", "email"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "eog-core validate: --domain email selects none of the 3 task(s) "
        "(they hold domains csm, itsm)"
    ]
    assert main(["validate", str(TASKS), "--domain", "csm", "--mode", "oracle"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "eog-core validate: --domain csm --mode oracle selects none of the 3 task(s) "
        "(they hold domains csm, itsm; modes unknown)"
    ]


def test_a_domain_the_tasks_name_is_known_and_selects_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = TASKS / "csm" / "task_example_case_closure.json"
    task = json.loads(source.read_text(encoding="utf-8"))
    task["domain"] = "payroll"
    (tmp_path / "payroll.json").write_text(json.dumps(task), encoding="utf-8")
    assert main(["validate", str(tmp_path), "--domain", "payroll", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["valid"] == 1
    assert main(["validate", str(tmp_path), "--domain", "payrol"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"eog-core validate: --domain payrol: unknown domain; the dataset's domains are {EIGHT} "
        "(these tasks also name payroll)"
    ]


def test_a_known_domain_selects_its_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(TASKS), "--domain", "itsm", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["by_domain_mode"] == [
        {"domain": "itsm", "mode": "unknown", "tasks": 1}
    ]


def test_run_refuses_a_gym_name_no_task_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the gateway does: a typo'd --gym would leave the task's gym at its task URL."""
    from eog_core.local import demo_paths

    argv = ["run", str(demo_paths().task), "--gym", "demo-cms-server=http://127.0.0.1:9"]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "eog-core run: error: --gym demo-cms-server: no task uses that gym; "
        "the tasks' gyms are demo-csm-server"
    ]
    assert not (tmp_path / "o").exists()
