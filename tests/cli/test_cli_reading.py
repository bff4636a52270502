"""``score``, ``compare`` and ``report`` read a run folder one way (its ``rollouts.jsonl``,
both verdicts) and refuse what is no run, or no place to write, in one wording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report.run_folders import make_run_folders


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_folders(tmp_path_factory.mktemp("runs"))["correct"]


def eog(*argv: str | Path, code: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def scored(*argv: str | Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(eog("score", *argv, "--json", code=0).stdout)
    return result


def test_score_of_a_run_folder_reads_its_rollouts_as_report_does(run: Path) -> None:
    folder, rollouts = scored(run), scored(run / "rollouts.jsonl")
    assert folder == rollouts
    assert folder["upstream"] is None
    overall = folder["corrected"]["overall"]
    assert overall["strict"]["runs_scored"] == overall["parity"]["runs_scored"] == 3


def test_upstream_s_files_are_still_scored_when_named(run: Path) -> None:
    upstream = scored(run / "upstream")
    assert upstream["upstream"] is not None
    assert upstream["corrected"]["overall"]["strict"] is None
    assert (
        upstream["corrected"]["overall"]["parity"] == scored(run)["corrected"]["overall"]["parity"]
    )
    text = eog("score", run, "--upstream-only", code=0).stdout  # upstream's reading of the folder
    assert [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| u")] == [
        "upstream"
    ]
    assert eog("score", run / "upstream", code=0).stdout.startswith("== Upstream's numbers")


def test_compare_reads_a_run_folder_as_its_rollouts(run: Path) -> None:
    argv = ("--json", "--n-boot", "50", "--policy", "strict")
    comparison = json.loads(eog("compare", run, run / "rollouts.jsonl", *argv, code=0).stdout)
    assert (comparison["pairs"], comparison["pairs_without_policy"]) == (3, 0)


def test_a_path_that_is_no_run_is_worded_once(run: Path, tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    lines = {
        eog(*argv, code=3).stderr.strip().split(": ", 1)[1]
        for argv in (
            ("score", typo),
            ("report", typo, "-o", tmp_path / "r.html"),
            ("compare", typo, run),
        )
    }
    assert lines == {f"MetricsError: {typo}: no such file or folder"}


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("{tmp}/nodir/r.html", "-o {tmp}/nodir/r.html: no folder {tmp}/nodir to write it in"),
        ("{tmp}", "-o {tmp}: that is a folder; give the file to write"),
    ],
)
def test_report_refuses_an_output_it_cannot_write_before_any_work(
    run: Path, tmp_path: Path, output: str, words: str
) -> None:
    done = eog("report", run, "-o", output.format(tmp=tmp_path), code=2)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"eog-core report: {words.format(tmp=tmp_path)}")
    assert "Errno" not in line


def test_report_refuses_a_price_for_a_model_not_in_the_runs(run: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    done = eog("report", run, "-o", page, "--price", "gpt-4.1=2,8", code=2)
    assert done.stderr.strip().splitlines() == [
        "eog-core report: --price gpt-4.1: no rollout of the run(s) is of that model; "
        "the runs' models: demo-correct"
    ]
    twice = ("--price", "demo-correct=2,8", "--price", "demo-correct=1,1")
    assert "given twice" in eog("report", run, "-o", page, *twice, code=2).stderr
    assert not page.exists()
    eog("report", run, "-o", page, "--price", "demo-correct=2,8", code=0)


def test_bands_json_of_a_task_id_with_a_lone_surrogate_is_whole(run: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    for record in records:
        record["task_id"] = "half \ud800 a pair"  # json.dumps writes the escape \ud800
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    bands = tmp_path / "bands.json"
    eog("report", tmp_path / "run", "-o", tmp_path / "r.html", "--bands-json", bands, code=0)
    document = json.loads(bands.read_text(encoding="ascii"))
    [always] = [b for b in document["runs"][0]["policies"]["strict"]["bands"] if b["tasks"]]
    assert [t["task_id"] for t in always["tasks"]] == ["half \ud800 a pair"]
