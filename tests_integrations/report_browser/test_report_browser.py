"""The report of a real run in headless Chromium: offline, the numbers of ``score``, filters, transcripts.

Run by ``nox -s report_browser`` (Debian's chromium, Playwright's Python package, no browser
download). A screenshot of the overview, the failures and a transcript is written to
``build/report_browser/`` (or ``$EOG_SCREENSHOT_DIR``) for people to look at.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.report.run_folders import HOSTILE, hostile_copy, make_run_folders

from eog_core._plumbing import percent
from eog_core.local import demo_paths
from tests_integrations.report_browser.browser import Recorder, browser

DEADLINE = 120.0
SCREENSHOTS = Path(
    os.environ.get("EOG_SCREENSHOT_DIR", Path(__file__).parents[2] / "build" / "report_browser")
)
METRICS = ("run_success_rate", "task_success_rate", "macro_success_rate", "verifier_pass_rate")


def cli(*argv: str | Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folders = make_run_folders(tmp_path_factory.mktemp("runs"))
    folders["hostile"] = hostile_copy(folders["correct"], tmp_path_factory.mktemp("hostile"))
    return folders


@pytest.fixture(scope="module")
def report(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("report") / "report.html"
    cli(
        "report",
        runs["correct"],
        runs["nothing"],
        "-o",
        page,
        "--title",
        "Demo task, k = 3",
        "--price",
        "demo-correct=2,8,0.5",
        "--tasks",
        demo_paths().task,
    )
    return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser() as launched:
        yield launched


def open_page(chromium: Any, path: Path, fragment: str = "") -> tuple[Any, Recorder]:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    recorder = Recorder()
    recorder.attach(page)
    page.goto(path.as_uri() + fragment, wait_until="load")
    return page, recorder


def count_is(page: Any, text: str) -> None:
    """Wait (Playwright's own polling: the page's CSP forbids evaluated strings) for the count line."""
    from playwright.sync_api import expect

    expect(page.locator("#rollout-count")).to_have_text(re.compile(f"^{text} "))


def test_loads_offline_with_no_console_error_and_no_request_but_the_file(
    chromium: Any, report: Path
) -> None:
    page, recorder = open_page(chromium, report)
    for tab in ("tasks", "rollouts", "compare", "bands", "overview"):
        page.click(f'#tabs a[data-tab="{tab}"]')
        page.wait_for_selector(f"#tab-{tab}.active")
    page.screenshot(path=str(SCREENSHOTS / "overview.png"), full_page=True)
    assert recorder.errors == []
    assert recorder.requests == [report.as_uri()]
    page.close()


@pytest.mark.parametrize(("run", "label"), [("0", "correct"), ("1", "nothing")])
def test_overview_numbers_equal_score_json(
    chromium: Any, report: Path, runs: dict[str, Path], run: str, label: str
) -> None:
    corrected = json.loads(cli("score", runs[label] / "rollouts.jsonl", "--json"))["corrected"]
    page, _ = open_page(chromium, report)
    for policy in ("strict", "parity"):
        row = page.locator(
            f'article[data-run="{run}"] table.overview[data-policy="{policy}"] '
            'tr[data-group="overall:all"]'
        )
        stats = corrected["overall"][policy]
        for metric in METRICS:
            assert (
                row.locator(f'td[data-metric="{metric}"]').inner_text()
                == f"{percent(stats[metric])}%"
            )
        for metric in ("runs_scored", "runs_errored", "tasks_scored"):
            assert row.locator(f'td[data-metric="{metric}"]').inner_text() == str(stats[metric])
        passk = page.locator(f'article[data-run="{run}"] table.passk[data-policy="{policy}"]')
        for entry in stats["pass_at"]:
            shown = passk.locator(f'td[data-metric="pass_at_{entry["k"]}"]').inner_text()
            assert shown == f"{percent(entry['value'])}%"
    page.close()


@pytest.mark.parametrize("policy", ["strict", "parity"])
def test_filtering_to_failures_shows_only_failures(
    chromium: Any, report: Path, policy: str
) -> None:
    page, recorder = open_page(chromium, report, "#rollouts")
    assert page.locator("#rollout-table tbody tr").count() == 6
    page.select_option('#rollout-filters [data-filter="policy"]', policy)
    page.select_option('#rollout-filters [data-filter="outcome"]', "fail")
    count_is(page, "3 of 6")
    column = 5 if policy == "strict" else 6
    cells = page.locator(f"#rollout-table tbody tr td:nth-child({column})")
    assert [cells.nth(i).get_attribute("data-outcome") for i in range(cells.count())] == [
        "fail"
    ] * 3
    assert set(page.locator("#rollout-table tbody tr td:nth-child(1)").all_inner_texts()) == {
        "nothing (demo-answer)"
    }
    page.select_option('#rollout-filters [data-filter="outcome"]', "pass")
    count_is(page, "3 of 6")
    assert {cells.nth(i).get_attribute("data-outcome") for i in range(cells.count())} == {"pass"}
    page.goto(report.as_uri() + "#rollouts?outcome=fail")  # the same filter as a deep link
    count_is(page, "3 of 6")
    page.screenshot(path=str(SCREENSHOTS / "failures.png"))
    assert recorder.errors == []
    page.close()


def test_search_finds_rollouts_by_transcript_text(chromium: Any, report: Path) -> None:
    page, _ = open_page(chromium, report, "#rollouts")
    page.fill('#rollout-filters [data-filter="q"]', "update_entitlement")
    count_is(page, "3 of 6")
    assert set(page.locator("#rollout-table tbody tr td:nth-child(1)").all_inner_texts()) == {
        "correct (demo-correct)"
    }
    page.close()


def test_a_transcript_opens_and_shows_every_tool_call_and_both_verdicts(
    chromium: Any, report: Path, runs: dict[str, Path]
) -> None:
    records = sorted(
        (
            json.loads(line)
            for line in (runs["correct"] / "rollouts.jsonl").read_text().splitlines()
        ),
        key=lambda r: r["repeat"],
    )
    calls = [c for t in records[0]["turns"] for c in t["tool_calls"]]
    page, recorder = open_page(chromium, report, "#rollouts")
    page.locator("#rollout-table tbody tr").first.click()
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert (
        page.evaluate("location.hash")
        == "#rollout=" + "correct%2Foracle%2Fcsm%2Fdemo_csm_fleet_renewal%2F0"
    )
    shown = page.locator("#transcript .call .callhead b").all_inner_texts()
    assert shown == [c["name"] for c in calls] and len(shown) == 9
    arguments = page.locator("#transcript .call pre.args").all_inner_texts()
    assert [json.loads(a) for a in arguments] == [json.loads(c["arguments"]) for c in calls]
    for policy in ("strict", "parity"):
        rows = page.locator(f'#transcript table.verdicts[data-policy="{policy}"] tbody tr')
        expected = records[0]["results"] if policy == "strict" else records[0]["parity"]["results"]
        assert rows.count() == len(expected)
        assert rows.nth(0).locator("td:nth-child(4)").inner_text() == str(expected[0]["expected"])
    assert "Harbor Lane" in page.locator("#transcript").inner_text()  # the user prompt (--tasks)
    page.mouse.wheel(0, -100_000)  # at the top, the sticky header stays where it belongs
    page.screenshot(path=str(SCREENSHOTS / "transcript.png"), full_page=True)
    page.reload()  # the deep link opens the same rollout
    page.wait_for_selector("#transcript:not([hidden]) .call")
    assert page.locator("#transcript .call").count() == 9
    assert recorder.errors == []
    page.close()


def test_hostile_model_text_is_shown_as_text_and_never_runs(
    chromium: Any, runs: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "hostile.html"
    cli("report", runs["hostile"], "-o", path)
    page, recorder = open_page(
        chromium,
        path,
        f"#rollout={runs['hostile'].name}%2Foracle%2Fcsm%2Fdemo_csm_fleet_renewal%2F0",
    )
    page.wait_for_selector("#transcript:not([hidden]) .call")
    page.locator("#transcript details summary").first.click()
    assert page.evaluate("window.pwned") is None
    assert page.locator("#transcript img").count() == 0
    assert page.locator("#transcript pre.final").inner_text() == HOSTILE
    assert recorder.errors == []
    assert [url.split("#")[0] for url in recorder.requests] == [path.as_uri()]
    page.close()


def test_tasks_tab_deep_link_and_a_task_opens_its_rollouts(chromium: Any, report: Path) -> None:
    from playwright.sync_api import expect

    page, recorder = open_page(chromium, report, "#tasks?band=never")
    rows = page.locator("#task-table tbody tr")
    expect(rows).to_have_count(1)
    assert rows.first.locator("td:nth-child(1)").inner_text() == "nothing (demo-answer)"
    assert rows.first.locator(".dot.fail").count() == 3
    rows.first.click()
    count_is(page, "3 of 6")
    assert set(page.locator("#rollout-table tbody tr td:nth-child(1)").all_inner_texts()) == {
        "nothing (demo-answer)"
    }
    assert recorder.errors == []
    page.close()
