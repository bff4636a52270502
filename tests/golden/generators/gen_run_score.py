"""Generate tests/golden/run_score.json: upstream's compute_score.py on an ``eog-core run`` folder.

Runs the scenario of ``tests/run/score_scenario.py`` (scripted model, LocalGym),
then upstream's own ``compute_score.py --results_folder OUT/upstream`` and keeps
its table rows. ``tests/run/test_run_upstream.py`` replays the same scenario and
checks that ``eog-core score`` reads the folder with the same numbers.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym \\
    EOG_UPSTREAM_PYTHON=/path/to/python-with-tabulate-and-tqdm \\
    python tests/golden/generators/gen_run_score.py

Upstream is run, never copied: its scorer runs in a subprocess from its own folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OUTPUT = REPO / "tests" / "golden" / "run_score.json"


def upstream_dir() -> Path:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder:
        sys.exit("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym")
    path = Path(folder)
    if not (path / "compute_score.py").is_file():
        sys.exit(f"{path} has no compute_score.py")
    return path


def parse_grid(stdout: str) -> list[dict[str, str]]:
    """The data rows of tabulate's grid table, cells stripped of colour codes."""
    rows = [line for line in stdout.splitlines() if line.startswith("|")]
    cells = [
        [re.sub(r"\x1b\[\d+m", "", c).strip() for c in row.strip("|").split("|")] for row in rows
    ]
    header, *data = cells
    return [dict(zip(header, row, strict=True)) for row in data]


def main() -> None:
    upstream = upstream_dir()
    sys.path.insert(0, str(REPO))
    from tests.run.score_scenario import run_score_scenario

    with tempfile.TemporaryDirectory() as temporary:
        out = Path(temporary)
        asyncio.run(run_score_scenario(out))
        python = os.environ.get("EOG_UPSTREAM_PYTHON", sys.executable)
        done = subprocess.run(
            [python, "compute_score.py", "--results_folder", str(out / "upstream")],
            cwd=upstream,
            capture_output=True,
            text=True,
            check=True,
        )
    golden = {
        "generator": "tests/golden/generators/gen_run_score.py",
        "upstream": "ServiceNow/EnterpriseOps-Gym compute_score.py",
        "rows": parse_grid(done.stdout),
        "stdout": done.stdout,
    }
    OUTPUT.write_text(json.dumps(golden, indent=2) + "\n")
    print(f"wrote {OUTPUT}: {golden['rows']}")


if __name__ == "__main__":
    main()
