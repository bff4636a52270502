"""Edges the review and the first hour found (#20), each run as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from eog_core.local import demo_paths
from eog_core.tasks import MISSING_MODE
from tests.cli.test_cli import demo_snapshot, eog
from tests.cli.test_cli_first_hour import one_line
from tests.datasets import EXAMPLES


def verdicts_file(path: Path, outcomes: list[bool]) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"t{i}",
                    "domain": "csm",
                    "mode": "oracle",
                    "repeat": 0,
                    "policy": "strict",
                    "success": ok,
                    "reward": float(ok),
                    "pass_rate": float(ok),
                    "num_defined": 1,
                    "num_scored": 1,
                    "evaluation_completed": True,
                    "failure_kind": None,
                }
            )
            + "\n"
            for i, ok in enumerate(outcomes)
        )
    )
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["score", "{v}", "--k", "99999999999999999999"],
            "--k: expected 1 to 20, got 99999999999999999999",
        ),
        (["score", "{v}", "--k", "10000000000"], "--k: expected 1 to 20"),
        (["score", "{v}", "--k", "100"], "--k: expected 1 to 20, got 100"),
        (["score", "{v}", "--k", "three"], "--k: expected a whole number, got 'three'"),
        (
            ["compare", "{v}", "{v}", "--n-boot", "99999999999999999999"],
            "--n-boot: expected 1 to 100000",
        ),
        (["compare", "{v}", "{v}", "--margin", "-1"], "margin must be a fraction between 0 and 1"),
    ],
)
def test_out_of_range_numbers_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], said: str
) -> None:
    verdicts = verdicts_file(tmp_path / "v.jsonl", [True, False])
    done = eog(*[a.format(v=verdicts) for a in args], check_code=2)
    assert said in one_line(done.stderr)


SITE_HOOK = '''
import os, sys

class _Announce:
    """Tells the test when eog_core starts importing (the window the test interrupts)."""

    def find_spec(self, name, path=None, target=None):
        if name == "eog_core":
            sys.meta_path.remove(self)
            os.write(int(os.environ["EOG_TEST_STARTED_FD"]), b"started\\n")
        return None

if os.environ.get("EOG_TEST_STARTED_FD"):
    sys.meta_path.insert(0, _Announce())
'''


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_ctrl_c_while_the_library_imports_is_exit_130_without_a_traceback(
    tmp_path: Path, inherited: str
) -> None:
    """The console script's entry catches an interrupt that lands before eog_core finished
    importing, also in a process that inherited SIGINT ignored (a background job of a
    script: the command's handlers honour it later, so it is honoured from the start)."""
    (tmp_path / "sitecustomize.py").write_text(SITE_HOOK)  # runs before the entry module imports
    read_end, write_end = os.pipe()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "EOG_TEST_STARTED_FD": str(write_end),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "_eog_core_console", "demo"],
        env=env,
        pass_fds=(write_end,),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if inherited == "ignored"
        else None,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as started:
        assert (
            started.readline() == b"started\n"
        )  # the interpreter is up; eog_core is importing now (most of a second)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_ctrl_c_after_demo_ok_keeps_the_demo_s_exit_code() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "_eog_core_console", "demo"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "demo OK":
            process.send_signal(signal.SIGINT)
            break
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, (out, err)
    assert "Traceback" not in err


def test_the_console_script_is_the_quiet_entry() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert 'eog-core = "_eog_core_console:main"' in pyproject


def test_score_of_only_incomplete_rollouts_is_exit_3_with_one_line(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"t{i}",
                    "domain": "csm",
                    "mode": "oracle",
                    "repeat": 0,
                    "policy": "strict",
                    "success": False,
                    "reward": 0.0,
                    "pass_rate": 0.0,
                    "num_defined": 1,
                    "num_scored": 0,
                    "evaluation_completed": False,
                    "failure_kind": "gym_unreachable",
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    done = eog("score", verdicts, check_code=3)
    assert "no rollout completed its evaluation (3 incomplete)" in one_line(done.stderr)
    assert "Corrected numbers" in done.stdout  # the table still shows what was read
    assert eog("score", verdicts, "--json", check_code=3).stdout.startswith("{")
    verdicts_file(tmp_path / "ok.jsonl", [True])
    eog("score", tmp_path / "ok.jsonl", check_code=0)


def test_convert_to_standard_output_and_rows_without_tools(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "other.json").write_text(json.dumps({"gym_name": "another-gym", "tools": []}))
    task = demo_paths().task
    done = eog("convert", task, "--tools", tools, "-o", "-")
    row = json.loads(done.stdout)
    assert row["verifier_metadata"]["task_id"] and row["responses_create_params"]["tools"] == []
    assert not (Path.cwd() / "-").exists()
    assert "the row has no tools" in one_line(done.stderr)
    summary = json.loads(
        eog("convert", task, "--tools", tools, "-o", tmp_path / "rows.jsonl", "--json").stdout
    )
    assert summary["rows"] == 1 and summary["rows_without_tools"] == 1
    report = json.loads(eog("validate", task, "--tools", tools, "--json").stdout)
    assert report["finding_counts"].get("no_tools") == 1


def test_validate_flags_a_task_run_zero_times(tmp_path: Path) -> None:
    raw = json.loads(demo_paths().task.read_text())
    raw["number_of_runs"] = 0
    (tmp_path / "t.json").write_text(json.dumps(raw))
    report = json.loads(eog("validate", tmp_path / "t.json", "--json").stdout)
    assert report["finding_counts"].get("no_runs") == 1


def test_messages_name_what_was_wrong(tmp_path: Path) -> None:
    task = demo_paths().task
    folder = tmp_path / "snapshot.sqlite"
    folder.mkdir()
    said = one_line(eog("verify", task, "--db", f"demo-csm-server={folder}", check_code=3).stderr)
    assert "is a directory, not a SQLite file" in said and "not found" not in said
    said = one_line(
        eog("serve-local", "--host", "nonexistent.invalid", "--port", "0", check_code=3).stderr
    )
    assert "nonexistent.invalid" in said


def test_a_missing_mode_is_spelled_the_same_everywhere(tmp_path: Path) -> None:
    raw = json.loads(demo_paths().task.read_text())
    raw.pop("mode", None)
    (tmp_path / "t.json").write_text(json.dumps(raw))
    report = json.loads(eog("validate", tmp_path / "t.json", "--json").stdout)
    assert [group["mode"] for group in report["by_domain_mode"]] == [MISSING_MODE]
    snapshot = demo_snapshot(tmp_path / "s.sqlite", played=True)
    verdict = json.loads(
        eog(
            "verify",
            tmp_path / "t.json",
            "--db",
            f"demo-csm-server={snapshot}",
            "--policy",
            "strict",
            "--json",
            check_code=None,
        ).stdout
    )
    assert verdict["mode"] == MISSING_MODE
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "demo.json").write_text(json.dumps({"gym_name": "demo-csm-server", "tools": []}))
    row = json.loads(eog("convert", tmp_path / "t.json", "--tools", tools, "-o", "-").stdout)
    assert row["verifier_metadata"]["mode"] == MISSING_MODE


def test_run_out_on_a_file_says_it_is_a_file(tmp_path: Path) -> None:
    taken = tmp_path / "results.txt"
    taken.write_text("not a folder")
    done = eog(
        "run",
        demo_paths().task,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--gym",
        "demo-csm-server=http://127.0.0.1:9",
        "--out",
        taken,
        check_code=3,
    )
    said = one_line(done.stderr)
    assert "is a file, not a folder" in said and "Errno" not in said


def test_verify_both_shows_each_policy_s_result(tmp_path: Path) -> None:
    snapshot = tmp_path / "final.sqlite"
    with sqlite3.connect(snapshot) as db:
        db.executescript((EXAMPLES / "fixtures" / "final_entitlement.sql").read_text())
    done = eog(
        "verify",
        EXAMPLES / "tasks" / "csm" / "task_example_entitlement_upgrade.json",
        "--db",
        f"sn-csm-server={snapshot}",
        "--policy",
        "both",
        "--now",
        "2026-01-05 12:00:00",
    )
    header, _, *rows = done.stdout.splitlines()[:5]
    assert header.split()[:4] == ["#", "verifier", "strict", "parity"]
    assert [row.split()[2:4] for row in rows] == [
        ["pass", "not"],
        ["pass", "pass"],
        ["pass", "FAIL"],
    ]
