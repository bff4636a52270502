"""``eog-core report --certificates DIR``: every task marked by its certificate, and a panel of
how much of the score rests on flagged and unchecked tasks (the numbers of ``score``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import cli
from tests.report.page import as_number, json_block, metric_cells
from tests.report.trust_runs import trust_run


@pytest.fixture(scope="module")
def six(
    run_folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    return trust_run(run_folders, tmp_path_factory.mktemp("trust"))


def _report(tmp: Path, *argv: str | Path) -> str:
    page = tmp / "report.html"
    done = cli("report", *argv, "-o", page, "--n-boot", "50")
    assert done.returncode == 0, done.stderr
    return page.read_text(encoding="utf-8")


def _script(html: str) -> str:
    return re.findall(r"<script>(.*?)</script>", html, re.S)[-1]


@pytest.fixture(scope="module")
def marked(six: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    run, tasks, certificates = six
    return _report(
        tmp_path_factory.mktemp("marked"), run, "--tasks", tasks, "--certificates", certificates
    )


def _score_part(six: tuple[Path, Path, Path]) -> dict[str, Any]:
    run, tasks, certificates = six
    done = cli("score", run, "--tasks", tasks, "--certificates", certificates, "--json")
    assert done.returncode == 0, done.stderr
    part: dict[str, Any] = json.loads(done.stdout)["certificates"]
    return part


def test_each_task_is_marked_with_its_status_kinds_and_staleness(marked: str) -> None:
    trust = json_block(marked, "eog-meta")["trust"]
    assert {task_id: t["label"] for task_id, t in trust.items()} == {
        "t_certified": "certified",
        "t_clean": "clean",
        "t_flagged": "flagged: may_truncate, passes_without_action",
        "t_none": "unchecked",
        "t_stale": "unchecked (stale)",
        "t_incomplete": "unchecked (incomplete)",
    }
    assert trust["t_stale"] == {
        "status": "unchecked",
        "kinds": [],
        "stale": True,
        "certificate": "certified",
        "label": "unchecked (stale)",
    }
    assert trust["t_flagged"]["kinds"] == ["may_truncate", "passes_without_action"]
    tasks = json_block(marked, "eog-tasks")
    assert {t["task_id"] for t in tasks} == set(trust)  # every row of the table has its mark
    assert "<th>Task</th><th>Certificate</th>" in marked  # the task table's column
    assert '<select data-filter="trust">' in marked  # and its filter (#tasks?trust=flagged)
    script = _script(marked)
    assert "trustBadge(t.task_id)" in script  # the task table's cell
    assert "certificate of the task: " in script  # the transcript's line


def test_the_panel_holds_the_numbers_of_score(marked: str, six: tuple[Path, Path, Path]) -> None:
    part = _score_part(six)
    cells = metric_cells(marked)
    for group in part["groups"]:
        row = f"trust:{group['status']}"
        assert cells[("0", "trust", row, "tasks")] == str(group["tasks"])
        assert cells[("0", "trust", row, "rollouts")] == str(group["rollouts"])
        for policy in ("strict", "parity"):
            shown = as_number(cells[("0", "trust", row, f"points_{policy}")])
            assert shown == pytest.approx(group["points"][policy])
    for over in ("clean", "certified"):
        summary = part[over]["overall"]
        assert cells[("0", "trust-scores", f"over:{over}", "tasks")] == str(summary["tasks"])
        for policy in ("strict", "parity"):
            shown = as_number(cells[("0", "trust-scores", f"over:{over}", policy)])
            assert shown == pytest.approx(summary[policy]["task_success_rate"])
    assert cells[("0", "trust", "trust:flagged", "tasks")] == "1"
    assert cells[("0", "trust", "trust:unchecked", "rollouts")] == "9"
    assert as_number(cells[("0", "trust-scores", "over:clean", "strict")]) == 0.5
    note = re.search(r'<p class="sub trust-note">(.*?)</p>', marked, re.S)
    assert note is not None
    assert "1 flagged task(s) (3 rollouts) carry 16.67 pp of the strict score" in note.group(1)
    assert "3 unchecked (9 rollouts, 33.33 pp), 1 of them stale" in note.group(1)


def test_without_task_files_no_certificate_is_stale(
    six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, _, certificates = six
    html = _report(tmp_path, run, "--certificates", certificates)
    trust = json_block(html, "eog-meta")["trust"]
    assert trust["t_stale"]["label"] == "certified"
    assert metric_cells(html)[("0", "trust", "trust:certified", "tasks")] == "2"


def test_an_empty_folder_leaves_every_task_unchecked(
    six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    html = _report(tmp_path, six[0], "--certificates", empty)
    assert {t["status"] for t in json_block(html, "eog-meta")["trust"].values()} == {"unchecked"}
    assert metric_cells(html)[("0", "trust", "trust:unchecked", "tasks")] == "6"


def test_without_certificates_the_page_has_none_of_it(
    six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    html = _report(tmp_path, six[0], "--tasks", six[1])
    assert "trust" not in json_block(html, "eog-meta")
    assert "Certificate" not in html and "trust" not in _script(html)
    assert not any(key[1].startswith("trust") for key in metric_cells(html))


def test_the_library_takes_the_certificates_read_by_certify(six: tuple[Path, Path, Path]) -> None:
    from eog_core.certify import read_certificates
    from eog_core.metrics import task_digests
    from eog_core.report import build_report

    run, tasks, certificates = six
    html, content = build_report(
        [run], certificates=read_certificates(certificates), task_digests=task_digests(tasks)
    )
    assert content.trust is not None and content.trust["t_stale"].stale
    assert content.runs[0].trust is not None
    assert content.runs[0].trust.group("flagged").points["strict"] == pytest.approx(100 / 6)
    assert json_block(html, "eog-meta")["trust"]["t_flagged"]["status"] == "flagged"
