"""Real run folders (made once per session) and a helper to run ``eog-core`` as a user does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report.run_folders import make_run_folders

DEADLINE = 120.0


@pytest.fixture(scope="session")
def run_folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_run_folders(tmp_path_factory.mktemp("runs"))


def cli(*argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m eog_core ARGV`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=env,
        check=False,
    )


def score_json(path: Path) -> dict[str, Any]:
    done = cli("score", path, "--json")
    assert done.returncode == 0, done.stderr
    corrected: dict[str, Any] = json.loads(done.stdout)["corrected"]
    return corrected
