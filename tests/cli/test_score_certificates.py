"""``eog-core score --certificates DIR``: the score over clean and over certified tasks, beside
the usual numbers, on a real run (LocalGym, the scripted model) with known verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import cli
from tests.report.run_folders import make_run_folders, read_records, write_run
from tests.report.trust_runs import trust_run

THIRD = 100 / 6  # one passing task of six, in percentage points


@pytest.fixture(scope="module")
def six(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("trust")
    return trust_run(make_run_folders(root / "runs"), root)


def _score(*argv: str | Path) -> dict[str, Any]:
    done = cli("score", *argv, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _subset(run: Path, task_ids: set[str], target: Path) -> Path:
    return write_run(target, [r for r in read_records(run) if r["task_id"] in task_ids])


def test_the_usual_numbers_stay_and_the_certificates_come_beside(
    six: tuple[Path, Path, Path],
) -> None:
    run, tasks, certificates = six
    plain = cli("score", run, "--tasks", tasks)
    with_them = cli("score", run, "--tasks", tasks, "--certificates", certificates)
    assert plain.returncode == with_them.returncode == 0, with_them.stderr
    assert "CERTIFICATES" not in plain.stdout
    assert with_them.stdout.startswith(plain.stdout.rstrip("\n") + "\n\nCERTIFICATES")
    before, after = (
        _score(run, "--tasks", tasks),
        _score(run, "--tasks", tasks, "--certificates", certificates),
    )
    assert "certificates" not in before
    assert after.pop("certificates")
    assert after == before


def test_scores_over_clean_and_certified_tasks_are_those_of_score_on_those_tasks(
    six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, tasks, certificates = six
    part = _score(run, "--tasks", tasks, "--certificates", certificates)["certificates"]
    clean = _score(_subset(run, {"t_certified", "t_clean"}, tmp_path / "clean"))["corrected"]
    certified = _score(_subset(run, {"t_certified"}, tmp_path / "certified"))["corrected"]
    assert part["clean"] == clean
    assert part["certified"] == certified
    assert clean["overall"]["strict"]["task_success_rate"] == 0.5
    assert certified["overall"]["parity"]["task_success_rate"] == 1.0


def test_tasks_rollouts_and_points_per_status(six: tuple[Path, Path, Path]) -> None:
    run, tasks, certificates = six
    document = _score(run, "--tasks", tasks, "--certificates", certificates)
    part = document["certificates"]
    groups = {g["status"]: g for g in part["groups"]}
    assert {s: (g["tasks"], g["rollouts"]) for s, g in groups.items()} == {
        "certified": (1, 3),
        "clean": (1, 3),
        "flagged": (1, 3),
        "unchecked": (3, 9),
    }
    for policy in ("strict", "parity"):
        points = {s: g["points"][policy] for s, g in groups.items()}
        assert points == pytest.approx(
            {"certified": THIRD, "clean": 0.0, "flagged": THIRD, "unchecked": 2 * THIRD}
        )
        overall = document["corrected"]["overall"][policy]["task_success_rate"]
        assert sum(points.values()) == pytest.approx(100 * overall)
    assert part["stale"] == 1
    assert part["kinds"] == [["may_truncate", 1], ["passes_without_action", 1]]
    labels = {task_id: t["label"] for task_id, t in part["tasks"].items()}
    assert labels == {
        "t_certified": "certified",
        "t_clean": "clean",
        "t_flagged": "flagged: may_truncate, passes_without_action",
        "t_none": "unchecked",
        "t_stale": "unchecked (stale)",
        "t_incomplete": "unchecked (incomplete)",
    }


def test_without_the_task_files_no_certificate_can_be_told_stale(
    six: tuple[Path, Path, Path],
) -> None:
    run, _, certificates = six
    part = _score(run, "--certificates", certificates)["certificates"]
    assert part["stale"] == 0
    assert part["tasks"]["t_stale"]["status"] == "certified"
    assert part["certified"]["overall"]["tasks"] == 2


def test_the_text_table(six: tuple[Path, Path, Path]) -> None:
    run, tasks, certificates = six
    done = cli("score", run, "--tasks", tasks, "--certificates", certificates)
    table = done.stdout.partition("CERTIFICATES")[2]
    lines = {line.split("|")[1].strip(): line for line in table.splitlines() if "|" in line}
    cells = {name: [c.strip() for c in line.split("|")[2:-1]] for name, line in lines.items()}
    assert cells["all tasks"] == ["6", "18", "66.67", "66.67", "66.67", "66.67"]
    assert cells["clean or certified tasks"] == ["2", "6", "50.00", "50.00", "50.00", "50.00"]
    assert cells["certified tasks"] == ["1", "3", "100.00", "100.00", "100.00", "100.00"]
    assert cells["certified"] == ["1", "3", "16.67", "16.67"]
    assert cells["clean"] == ["1", "3", "0.00", "0.00"]
    assert cells["flagged"] == ["1", "3", "16.67", "16.67"]
    assert cells["unchecked"] == ["3", "9", "33.33", "33.33"]
    assert "may_truncate 1, passes_without_action 1" in table
    assert "Stale certificates (task changed since): 1" in table


def _bad(directory: Path, case: str) -> Path:
    if case == "missing":
        return directory / "nowhere"
    directory.mkdir()
    bad = directory / "t.certificate.json"
    if case == "not JSON":
        bad.write_text('{"schema": "eog-certificate/1", ')
    else:
        bad.write_text(json.dumps({"schema": "eog-certificate/2", "task_id": "t"}))
    return directory


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("missing", "nowhere: not a folder of certificates"),
        ("not JSON", "t.certificate.json: not a JSON certificate"),
        ("other schema", "t.certificate.json: $.schema: schema is 'eog-certificate/2'"),
    ],
)
@pytest.mark.parametrize("command", ["score", "report"])
def test_a_bad_certificates_folder_is_one_line_naming_the_file_and_exit_2(
    six: tuple[Path, Path, Path], tmp_path: Path, case: str, words: str, command: str
) -> None:
    run = six[0]
    folder = _bad(tmp_path / "certs", case)
    page = tmp_path / "r.html"
    argv = ["-o", page] if command == "report" else []
    done = cli(command, run, *argv, "--certificates", folder)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"eog-core {command}: --certificates {tmp_path}")
    assert words in lines[0]
    assert done.stdout == "" and not page.exists()
