"""The page's edges (#35) in headless Chromium: malformed and older deep links, a task id with a
lone surrogate, a page split into transcripts blocks (one unreadable), verifiers not counted.

Run by ``nox -s report_browser`` as the rest of this folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.report.page import json_block
from tests.report.run_folders import large_copy, make_run_folders, read_records, write_run

from eog_core.report import build_content, load_run, write_html
from tests_integrations.report_browser.browser import Recorder, browser
from tests_integrations.report_browser.test_report_browser import cli, count_is

LINK = "%2Foracle%2Fcsm%2Fdemo_csm_fleet_renewal%2F0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_run_folders(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def report(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("report") / "report.html"
    cli("report", runs["correct"], runs["nothing"], "-o", page, "--n-boot", "200")
    return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser() as launched:
        yield launched


def open_page(chromium: Any, path: Path, fragment: str = "") -> tuple[Any, Recorder]:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    recorder = Recorder()
    recorder.attach(page)
    page.goto(path.as_uri() + fragment, wait_until="load")
    return page, recorder


def transcript_says(page: Any, text: str) -> None:
    """Wait (Playwright's polling) for the transcript panel to hold ``text``."""
    from playwright.sync_api import expect

    expect(page.locator("#transcript")).to_contain_text(text)


@pytest.mark.parametrize(
    ("fragment", "tab", "says"),
    [
        ("#%", "overview", None),
        ("#rollout=%E0%A4%A", "rollouts", "No rollout %E0%A4%A in this report."),
        ("#rollouts?outcome=%", "rollouts", None),
        ("#rollouts?%22%5D=1&q=%E0%A4%A", "rollouts", None),
        ("#%E0%A4%A?run=1", "overview", None),
    ],
)
def test_a_malformed_deep_link_opens_the_page_without_an_error(
    chromium: Any, report: Path, fragment: str, tab: str, says: str | None
) -> None:
    page, recorder = open_page(chromium, report, fragment)
    page.wait_for_selector(f"#tab-{tab}.active")
    if says is not None:
        transcript_says(page, says)
        assert page.locator("#transcript").inner_text() == says
    assert recorder.errors == []
    page.close()


def test_deep_links_by_run_name_and_an_older_page_s_by_index(chromium: Any, report: Path) -> None:
    from playwright.sync_api import expect

    page, recorder = open_page(chromium, report, "#rollout=nothing" + LINK)
    transcript_says(page, "nothing (demo-answer)")
    page.goto(report.as_uri() + "#rollout=0" + LINK)  # the run's index, as links were before
    expect(page.locator("#transcript .call")).to_have_count(9)
    page.goto(report.as_uri() + "#rollouts?run=nothing")
    count_is(page, "3 of 6")
    assert set(page.locator("#rollout-table tbody tr td:nth-child(1)").all_inner_texts()) == {
        "nothing (demo-answer)"
    }
    assert recorder.errors == []
    page.close()


def test_a_verifier_that_is_not_counted_is_shown_as_not_counted(
    chromium: Any, report: Path, runs: dict[str, Path]
) -> None:
    record = read_records(runs["nothing"])[0]
    counted = [r["counted"] for r in record["parity"]["results"]]
    assert False in counted and True in counted
    page, recorder = open_page(chromium, report, "#rollout=nothing" + LINK)
    page.wait_for_selector('#transcript table.verdicts[data-policy="parity"]')
    rows = page.locator('#transcript table.verdicts[data-policy="parity"] tbody tr')
    assert rows.count() == len(counted)
    for number, is_counted in enumerate(counted):
        badge = rows.nth(number).locator("td:nth-child(8) .badge")
        if is_counted:
            assert badge.inner_text() == "fail"
        else:
            assert badge.inner_text() == "not counted"
            assert "fail" not in (badge.get_attribute("class") or "")
            assert "fail" not in (rows.nth(number).get_attribute("class") or "")
    assert recorder.errors == []
    page.close()


def test_a_task_id_with_a_lone_surrogate_opens_and_links(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    records = [r | {"task_id": "task \udc80 half"} for r in read_records(runs["correct"])]
    run = write_run(tmp_path / "odd", records)
    path = tmp_path / "odd.html"
    cli("report", run, "-o", path)
    page, recorder = open_page(chromium, path, "#rollouts")
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert page.evaluate("location.hash").startswith("#rollout=odd%2Foracle%2Fcsm%2Ftask%20")
    page.reload()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert page.locator("#transcript .call").count() == 9
    assert recorder.errors == []
    page.close()


def _split_page(runs: dict[str, Path], folder: Path, **bounds: int) -> Path:
    run = large_copy(runs["correct"], folder / "large", 40)
    path = folder / "large.html"
    write_html(build_content([load_run(run)], title="large"), path, **bounds)
    return path


def test_a_split_page_searches_and_opens_transcripts_of_every_block(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    path = _split_page(runs, tmp_path, block_bytes=60_000, large_page_bytes=100_000)
    html = path.read_text()
    assert html.count('id="eog-details-') > 5
    page, recorder = open_page(chromium, path, "#rollouts")
    assert page.locator("header p.warning.size").inner_text().startswith("This page holds")
    page.fill('#rollout-filters [data-filter="q"]', "row 39 x")
    count_is(page, "1 of 40")
    page.locator("#rollout-table tbody tr").first.click()
    transcript_says(page, "large_0039")
    page.goto(path.as_uri() + "#rollout=large/oracle/csm/large_0000/0")
    page.locator("#transcript details summary").first.click()
    transcript_says(page, "row 0 xxx")
    assert recorder.errors == []
    page.close()


def test_a_block_the_browser_cannot_read_is_said_so_in_the_transcript_and_the_search(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    path = _split_page(runs, tmp_path, block_bytes=60_000)
    html = path.read_text()
    blocks = json_block(html, "eog-meta")["details"]
    assert len(blocks) > 2
    # what a block past the browser's longest string does (it cannot be read), made here by
    # breaking the JSON of block 2: the page must say so, not fail silently
    start = html.index('<script type="application/json" id="eog-details-1">')
    start = html.index(">", start) + 1
    path.write_text(html[:start] + "[{" + html[html.index("</script>", start) :])
    page, recorder = open_page(chromium, path, "#rollouts")
    page.fill('#rollout-filters [data-filter="q"]', "row 0 x")
    from playwright.sync_api import expect

    missed = blocks[1][1]
    expect(page.locator("#rollout-count")).to_have_text(
        f"1 of 40 rollouts · the search could not read {missed} transcripts: "
        "the page is too big for this browser"
    )
    page.goto(path.as_uri() + "#rollout=large/oracle/csm/large_0039/0")  # the last block
    expect(page.locator("#transcript .call")).to_have_count(9)
    unreadable = blocks[1][0]  # the first rollout of block 2
    page.goto(path.as_uri() + f"#rollout=large/oracle/csm/large_{unreadable:04d}/0")
    transcript_says(
        page, f"This transcript cannot be shown: its block of the page (2 of {len(blocks)}"
    )
    transcript_says(page, "Its record is in the run's rollouts.jsonl.")
    assert page.locator("#transcript .call").count() == 0
    assert recorder.errors == []
    page.close()
