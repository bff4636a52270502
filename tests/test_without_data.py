"""A clone without the benchmark data passes its tests; in CI the same absence fails.

Runs pytest as a subprocess on the data-dependent modules with ``EOG_DATA_DIR``
pointing at a folder that does not exist: the data tests must skip with a reason
that says how to get the data, and their committed syrupy snapshots must not be
judged unused (syrupy fails a run on unused snapshots). With ``CI=true`` the same
run must fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA_MODULES = ["tests/verify/test_snapshots.py", "tests/tasks/test_load.py"]


def run_pytest(
    tmp_path: Path, *, ci: bool, extra: tuple[str, ...] | list[str] = ()
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["EOG_DATA_DIR"] = str(tmp_path / "no-such-eog-data")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-rs", *extra, *DATA_MODULES],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env=env,
        check=False,
    )


SNAPSHOTS = REPO / "tests" / "verify" / "__snapshots__" / "test_snapshots"


def committed_snapshots() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in SNAPSHOTS.iterdir()}


def test_missing_data_skips_with_a_reason_and_leaves_snapshots_alone(tmp_path: Path) -> None:
    before = committed_snapshots()
    done = run_pytest(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped" in done.stdout and "set EOG_DATA_DIR" in done.stdout
    assert "their snapshots are not judged" in done.stdout  # the report header says why
    assert "passed" in done.stdout  # the tests on our own examples still ran
    assert committed_snapshots() == before


def test_snapshot_update_without_data_is_refused(tmp_path: Path) -> None:
    before = committed_snapshots()
    done = run_pytest(tmp_path, ci=False, extra=["--snapshot-update"])
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "would delete the committed snapshots" in done.stderr
    assert committed_snapshots() == before


def test_missing_data_fails_in_ci(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, ci=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "benchmark data not found" in done.stdout
