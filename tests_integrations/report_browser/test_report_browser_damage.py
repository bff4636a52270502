"""Collateral damage in headless Chromium (#32): the Damage column and filter, a strict success
that damages shown as damage, and the rollout's state diff in its transcript.

Run by ``nox -s report_browser`` as the rest of this folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.report.run_folders import damage_copy, make_run_folders

from tests_integrations.report_browser.browser import Recorder, browser
from tests_integrations.report_browser.test_report_browser import SCREENSHOTS, cli, count_is


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folders = make_run_folders(tmp_path_factory.mktemp("runs"))
    folders["damaged"] = damage_copy(
        folders["correct"], tmp_path_factory.mktemp("damage") / "damaged"
    )
    return folders


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser() as launched:
        yield launched


def _page(chromium: Any, runs: dict[str, Path], folder: Path, *names: str) -> tuple[Any, Recorder]:
    path = folder / "report.html"
    cli("report", *(runs[name] for name in names), "-o", path, "--n-boot", "200")
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    recorder = Recorder()
    recorder.attach(page)
    page.goto(path.as_uri() + "#rollouts", wait_until="load")
    return page, recorder


def test_a_success_that_damages_is_shown_as_damage_with_its_diff(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    page, recorder = _page(chromium, runs, tmp_path, "correct", "damaged")
    assert "Damage" in page.locator("#rollout-table thead").inner_text()
    page.select_option('#rollout-filters [data-filter="damage"]', "success_damage")
    count_is(page, "1 of 6")
    cell = page.locator('#rollout-table tbody tr td[data-damage="success_damage"]')
    assert cell.inner_text() == "success + damage"
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) table.diff")
    transcript = page.locator("#transcript")
    assert "State diff · FAIL_DAMAGE · severity HIGH" in transcript.inner_text()
    assert "Strict success while damaging: counted as damage" in transcript.inner_text()
    rows = page.locator("#transcript table.diff tbody tr")
    assert rows.count() == 5
    wreck = page.locator('#transcript table.diff tbody tr[data-verdict="damage"]')
    assert wreck.count() == 1
    cells = wreck.locator("td").all_inner_texts()
    assert cells[:4] == ["demo-csm-server", "entitlement", "modified", '{"sys_id":"ent_004"}']
    assert cells[4] == "status: active → suspended"
    assert cells[5].startswith("damage") and "damaged: status" in cells[5]
    assert cells[6] == "HIGH"
    page.screenshot(path=str(SCREENSHOTS / "damage.png"), full_page=True)
    page.select_option('#rollout-filters [data-filter="damage"]', "none")  # no capture
    count_is(page, "3 of 6")
    assert recorder.errors == []
    page.close()


def test_a_page_without_damage_has_no_damage_column(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    page, recorder = _page(chromium, runs, tmp_path, "correct", "nothing")
    count_is(page, "6 of 6")
    assert "Damage" not in page.locator("#rollout-table thead").inner_text()
    assert page.locator("#rollout-table tbody tr").first.locator("td").count() == 13
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert page.locator("#transcript table.diff").count() == 0
    assert recorder.errors == []
    page.close()
