"""``eog-core report`` on 10,000 synthetic but realistic rollouts (``report_workload.py``).

* build: read ``rollouts.jsonl`` (about 190 MB), compute every number through
  ``eog_core.metrics`` and render the page (about 160 MB), as ``eog-core report``
  does (target < 5 s); the CPU time of the process is recorded beside the wall
  time (on a shared machine the wall time also counts waiting for a core);
* first paint: open the page from disk in Debian's headless chromium (Playwright,
  no browser download) and read the First Contentful Paint of the overview from
  the page's paint timing (target < 2 s); also the time until ``load`` (the
  script has run: tables and filters work). Skipped when chromium or Playwright
  is missing (``nox -s report_browser`` installs both).

    pytest benchmarks/bench_report.py -o python_files='bench_*.py'
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from eog_core.report import write_report  # noqa: E402
from report_workload import write_workload  # noqa: E402

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_workload(tmp_path_factory.mktemp("report-bench") / "run")


@pytest.fixture(scope="module")
def page(workload: Path) -> Path:
    path = workload.parent / "report.html"
    write_report([workload], path)
    return path


def test_build_report_of_10000_rollouts(
    benchmark: BenchmarkFixture, workload: Path, tmp_path: Path
) -> None:
    benchmark.group = "report-10000"
    out = tmp_path / "report.html"

    cpu: list[float] = []

    def build() -> int:
        started = time.process_time()
        content = write_report([workload], out)
        cpu.append(time.process_time() - started)
        return len(content.rows)

    assert benchmark.pedantic(build, rounds=3, iterations=1) == 10_000
    benchmark.extra_info["cpu_s_median"] = round(sorted(cpu)[len(cpu) // 2], 3)
    benchmark.extra_info["input_mb"] = round((workload / "rollouts.jsonl").stat().st_size / 1e6, 1)
    benchmark.extra_info["page_mb"] = round(out.stat().st_size / 1e6, 1)


def test_first_paint_in_chromium(benchmark: BenchmarkFixture, page: Path) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (nox -s report_browser installs it)")
    benchmark.group = "report-10000"
    paints: list[float] = []
    loads: list[float] = []
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)

        def open_page() -> None:
            tab = browser.new_page()
            started = time.perf_counter()
            tab.goto(page.as_uri(), wait_until="load")
            loads.append(time.perf_counter() - started)
            entries = tab.evaluate(
                "performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)"
            )
            paints.append(entries[0] / 1000)
            tab.close()

        benchmark.pedantic(open_page, rounds=5, iterations=1)
        browser.close()
    benchmark.extra_info["first_contentful_paint_s"] = sorted(paints)[len(paints) // 2]
    benchmark.extra_info["load_s"] = sorted(loads)[len(loads) // 2]
    assert paints
