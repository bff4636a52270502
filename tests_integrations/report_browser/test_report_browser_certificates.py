"""``report --certificates`` in headless Chromium (#31): the task table's Certificate column and
filter, and the certificate named in a transcript.

Run by ``nox -s report_browser`` as the rest of this folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.report.run_folders import make_run_folders
from tests.report.trust_runs import trust_run

from tests_integrations.report_browser.browser import Recorder, browser
from tests_integrations.report_browser.test_report_browser import SCREENSHOTS, cli


@pytest.fixture(scope="module")
def six(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("trust")
    return trust_run(make_run_folders(root / "runs"), root)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser() as launched:
        yield launched


def _page(chromium: Any, path: Path, hash_: str) -> tuple[Any, Recorder]:
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    recorder = Recorder()
    recorder.attach(page)
    page.goto(path.as_uri() + hash_, wait_until="load")
    return page, recorder


def test_tasks_and_transcripts_name_their_certificate(
    chromium: Any, six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, tasks, certificates = six
    path = tmp_path / "report.html"
    cli(
        "report",
        run,
        "-o",
        path,
        "--tasks",
        tasks,
        "--certificates",
        certificates,
        "--n-boot",
        "50",
    )
    page, recorder = _page(chromium, path, "#tasks")
    assert "Certificate" in page.locator("#task-table thead").inner_text()
    page.wait_for_selector("#task-table tbody tr")
    shown = {}
    for row in page.locator("#task-table tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        shown[cells[2]] = cells[3]
    assert shown == {
        "t_certified": "certified",
        "t_clean": "clean",
        "t_flagged": "flagged: may_truncate, passes_without_action",
        "t_none": "unchecked",
        "t_stale": "unchecked (stale)",
        "t_incomplete": "unchecked (incomplete)",
    }
    page.select_option('#task-filters [data-filter="trust"]', "unchecked")
    page.wait_for_function("document.querySelectorAll('#task-table tbody tr').length === 3")
    page.screenshot(path=str(SCREENSHOTS / "certificates-tasks.png"), full_page=True)
    page.goto(path.as_uri() + "#rollouts?q=t_stale", wait_until="load")
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    line = page.locator("#transcript p.trust")
    assert line.inner_text() == "certificate of the task: unchecked (stale)"
    assert page.locator("#tab-overview .trust-note").count() == 1
    assert recorder.errors == []
    page.close()


def test_without_certificates_the_task_table_is_as_before(
    chromium: Any, six: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    cli("report", six[0], "-o", path, "--n-boot", "50")
    page, recorder = _page(chromium, path, "#tasks")
    page.wait_for_selector("#task-table tbody tr")
    assert "Certificate" not in page.locator("#task-table thead").inner_text()
    assert page.locator("#task-table tbody tr").first.locator("td").count() == 11
    page.goto(path.as_uri() + "#rollouts?q=t_stale", wait_until="load")
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert page.locator("#transcript p.trust").count() == 0
    assert recorder.errors == []
    page.close()
