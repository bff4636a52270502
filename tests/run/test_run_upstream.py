"""The ``upstream/`` folder of a run: upstream's compute_score.py and ``eog-core score`` agree.

``tests/golden/run_score.json`` holds upstream's own table for this scenario
(``tests/golden/generators/gen_run_score.py``); ``EOG_RUN_SCORE_GOLDEN_FILE``
names another file of that format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core.cli import main
from eog_core.run import ROLLOUTS_FILE, UPSTREAM_DIR
from tests.run.score_scenario import run_score_scenario

GOLDEN = Path(
    os.environ.get(
        "EOG_RUN_SCORE_GOLDEN_FILE", Path(__file__).parents[1] / "golden" / "run_score.json"
    )
)


def load_golden() -> dict[str, Any]:
    golden: dict[str, Any] = json.loads(GOLDEN.read_text())
    return golden


def score_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["score", "--json", str(path)]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


async def test_upstream_folder_scores_as_upstream_computes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = load_golden()
    report = await run_score_scenario(tmp_path)
    assert report.all_evaluated

    ours = score_json(tmp_path / UPSTREAM_DIR, capsys)["upstream"]["groups"]

    expected = [
        (
            row["Mode"],
            int(row["Total Files"]),
            int(row["Files w/ Errors"]),
            float(row["Avg Success Rate (%)"]),
            float(row["Avg Verifier Pass (%)"]),
        )
        for row in golden["rows"]
    ]
    assert expected == [
        (
            g["name"],
            g["total_files"],
            g["files_with_errors"],
            round(100 * g["avg_success_rate"], 2),
            round(100 * g["avg_verifier_pass_rate"], 2),
        )
        for g in ours
    ]


async def test_rollouts_jsonl_is_a_verdict_file_with_the_same_parity_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await run_score_scenario(tmp_path)
    upstream = score_json(tmp_path / UPSTREAM_DIR, capsys)["upstream"]["overall"]
    corrected = score_json(tmp_path / ROLLOUTS_FILE, capsys)["corrected"]["overall"]

    parity, strict = corrected["parity"], corrected["strict"]
    assert (parity["run_success_rate"], parity["verifier_pass_rate"]) == (
        upstream["avg_success_rate"],
        upstream["avg_verifier_pass_rate"],
    )
    # strict counts both same-named verifiers: 5/6 on the partial task instead of 4/5
    assert strict["verifier_pass_rate"] == pytest.approx((1 + 5 / 6) / 2)
