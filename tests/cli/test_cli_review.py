"""Edges the review and the first hour found (#20), each run as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import eog
from tests.cli.test_cli_first_hour import one_line


def verdicts_file(path: Path, outcomes: list[bool]) -> Path:
    path.write_text("".join(json.dumps({
        "task_id": f"t{i}", "domain": "csm", "mode": "oracle", "repeat": 0, "policy": "strict",
        "success": ok, "reward": float(ok), "pass_rate": float(ok), "num_defined": 1, "num_scored": 1,
        "evaluation_completed": True, "failure_kind": None}) + "\n" for i, ok in enumerate(outcomes)))
    return path


@pytest.mark.parametrize(("args", "said"), [
    (["score", "{v}", "--k", "99999999999999999999"], "--k: expected 1 to 20, got 99999999999999999999"),
    (["score", "{v}", "--k", "10000000000"], "--k: expected 1 to 20"),
    (["score", "{v}", "--k", "100"], "--k: expected 1 to 20, got 100"),
    (["score", "{v}", "--k", "three"], "--k: expected a whole number, got 'three'"),
    (["compare", "{v}", "{v}", "--n-boot", "99999999999999999999"], "--n-boot: expected 1 to 100000"),
    (["compare", "{v}", "{v}", "--margin", "-1"], "margin must be a fraction between 0 and 1"),
])
def test_out_of_range_numbers_are_one_line_and_exit_2(tmp_path: Path, args: list[str], said: str) -> None:
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


def test_ctrl_c_while_the_library_imports_is_exit_130_without_a_traceback(tmp_path: Path) -> None:
    """The console script's entry catches an interrupt that lands before eog_core finished importing."""
    (tmp_path / "sitecustomize.py").write_text(SITE_HOOK)  # runs before the entry module imports
    read_end, write_end = os.pipe()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "EOG_TEST_STARTED_FD": str(write_end)}
    process = subprocess.Popen([sys.executable, "-m", "_eog_core_console", "demo"], env=env,
                               pass_fds=(write_end,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as started:
        assert started.readline() == b"started\n"  # the interpreter is up; eog_core is importing now (most of a second)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_ctrl_c_after_demo_ok_keeps_the_demo_s_exit_code() -> None:
    process = subprocess.Popen([sys.executable, "-m", "_eog_core_console", "demo"],
                               env={**os.environ, "PYTHONUNBUFFERED": "1"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
