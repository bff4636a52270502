"""``eog-core score`` on upstream result folders: upstream's printout, as compute_score.py prints it.

The expected texts were printed by upstream's compute_score.py on the same folders
(tests/metrics/test_golden_score.py replays 560 such folders through the library).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BANNER = "=" * 100


def eog(*args: str | Path, check_code: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == check_code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def result(success: float, verifiers: float, error: str | None = None) -> str:
    run: dict[str, Any] = {"run_number": 1, "overall_success": success == 1.0}
    if error:
        run["error"] = error
    return json.dumps(
        {
            "runs": [run],
            "statistics": {"overall_success_rate": success, "verifier_level_pass_rate": verifiers},
        }
    )


def write(root: Path, name: str, text: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text, encoding="utf-8")


def test_local_folder_names_nested_files_and_an_empty_run(tmp_path: Path) -> None:
    root = tmp_path / "out"
    write(root, "run_1/results_task_20251205_a.json", result(1.0, 1.0))
    write(root, "run_1/results_task_20251205_b.json", result(0.0, 0.5, error="LLM timeout"))
    write(root, "run_1/x/results_task_20251205_c.json", result(0.0, 0.125))
    (root / "run_2").mkdir()
    done = eog("score", root, "--upstream-only", check_code=0)
    # compute_score.py printed this (with \x1b[91m1\x1b[0m: no colour off a terminal)
    assert done.stdout == "\n".join(
        [
            "",
            BANNER,
            "FINAL RESULTS",
            BANNER,
            "",
            "+--------+---------------+-------------------+------------------------+-------------------------+",
            "| Mode   |   Total Files |   Files w/ Errors |   Avg Success Rate (%) |   Avg Verifier Pass (%) |",
            "+========+===============+===================+========================+=========================+",
            "| run_1  |             3 |                 1 |                  33.33 |                   54.17 |",
            "+--------+---------------+-------------------+------------------------+-------------------------+",
            "| run_2  |             0 |                 0 |                   0    |                    0    |",
            "+--------+---------------+-------------------+------------------------+-------------------------+",
            "",
            "",
        ]
    )
    full = eog("score", root, check_code=0)  # results_task_* files are scored, not "no scored runs"
    assert "| run_2  |             0 |" in full.stdout and "Corrected" in full.stdout


def test_a_rate_too_large_to_average_names_its_file(tmp_path: Path) -> None:
    root = tmp_path / "out"
    write(root, "run_1/results_oracle__csm__t1.json", result(1.0, 1.0))
    write(
        root,
        "run_1/results_oracle__csm__t2.json",
        '{"runs": [], "statistics": {"overall_success_rate": 1'
        + "0" * 400
        + ', "verifier_level_pass_rate": 1}}',
    )
    done = eog("score", root, "--upstream-only", check_code=3)
    assert "results_oracle__csm__t2.json" in done.stderr and "too large" in done.stderr
    assert "Traceback" not in done.stderr
