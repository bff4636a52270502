"""The planner orchestrators' transcripts in headless Chromium (#34): a ``decomposing`` rollout's
subtask table, a heading per planner and sub-agent, the working memory and the tokens of each
role; a ``bad_decomposition`` rollout's reasons; a ``planner_react`` rollout's plan.

The run folders are made as docs/run.md's "Try it offline" makes them: ``eog-core serve-local``
and ``eog-core serve-model`` on loopback, ``eog-core run`` with a stand-in upstream checkout.
Run by ``nox -s report_browser`` as the rest of this folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.run.decomposing_upstream import fake_upstream as decomposing_upstream
from tests.run.planner_upstream import fake_upstream as planner_upstream

from eog_core.local import PLAN_TEXT, demo_paths
from tests_integrations.report_browser.browser import Recorder, browser
from tests_integrations.report_browser.test_report_browser import DEADLINE, SCREENSHOTS, cli

KEY_VAR = "EOG_TEST_MODEL_KEY"
ENV = {**os.environ, KEY_VAR: "sk-report-test"}
ROLLOUT = "/oracle/csm/demo_csm_fleet_renewal/"
TOKENS = re.compile(r" · (\d+) in / (\d+) out tokens$")


@contextmanager
def serve(command: str) -> Iterator[dict[str, Any]]:
    """``eog-core COMMAND --port 0 --json`` as a user starts it: its announcement; stopped
    with SIGINT (Ctrl-C) on the way out and checked to exit 0."""
    server = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "-q", command, "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # the first line, or "" when it died before announcing
        assert line, f"eog-core {command} exited: {server.communicate(timeout=DEADLINE)[1]}"
        yield json.loads(line)
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=DEADLINE)
    assert server.returncode == 0, err


def run(gym: dict[str, Any], model: dict[str, Any], out: Path, *extra: str) -> int:
    """``eog-core run`` on the demo task: its exit code."""
    paths = demo_paths()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eog_core",
            "-q",
            "run",
            str(paths.task),
            "--seed-root",
            str(paths.directory),
            "--gym",
            f"{gym['name']}={gym['url']}",
            "--base-url",
            model["base_url"],
            "--model",
            "demo",
            "--api-key-env",
            KEY_VAR,
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=ENV,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr
    return done.returncode


def records(folder: Path) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]
    return sorted(found, key=lambda r: r["repeat"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    upstream = planner_upstream(decomposing_upstream(root / "upstream"))
    folders = {name: root / name for name in ("decomposed", "bad", "planned")}
    decomposing = ("--orchestrator", "decomposing", "--upstream-dir", str(upstream))
    with serve("serve-local") as gym, serve("serve-model") as model:
        assert run(gym, model, folders["decomposed"], *decomposing, "--repeats", "2") == 0
        bad = ("--planner-model", "plan-no-json")
        assert run(gym, model, folders["bad"], *decomposing, *bad) == 3
        planner = ("--orchestrator", "planner_react", "--upstream-dir", str(upstream))
        assert run(gym, model, folders["planned"], *planner) == 0
    return folders


@pytest.fixture(scope="module")
def report(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("report") / "report.html"
    folders = (runs["decomposed"], runs["bad"], runs["planned"])
    cli("report", *folders, "-o", page, "--tasks", demo_paths().task, "--n-boot", "200")
    return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser() as launched:
        yield launched


def open_rollout(chromium: Any, report: Path, run: str, repeat: int = 0) -> tuple[Any, Recorder]:
    """The rollouts tab, then a click on the rollout's row: its transcript open."""
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    recorder = Recorder()
    recorder.attach(page)
    page.goto(report.as_uri() + "#rollouts", wait_until="load")
    page.locator(f'#rollout-table tbody tr[data-id="{run}{ROLLOUT}{repeat}"]').click()
    page.wait_for_selector("#transcript:not([hidden]) .turn")
    return page, recorder


def open_details(page: Any, summary: str) -> Any:
    """The transcript's ``<details>`` whose summary is ``summary``, opened: its ``<pre>``."""
    details = page.locator("#transcript details", has=page.locator(f'summary:text-is("{summary}")'))
    assert details.count() == 1
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    return details.locator("pre")


def test_a_decomposing_rollout_shows_subtasks_sub_agents_memory_and_tokens_by_role(
    chromium: Any, report: Path, runs: dict[str, Path]
) -> None:
    [record, _] = records(runs["decomposed"])
    decomposition = record["decomposition"]
    page, recorder = open_rollout(chromium, report, "decomposed")
    transcript = page.locator("#transcript")
    assert "Orchestrator: decomposing" in transcript.inner_text()
    assert open_details(page, "Plan (the planner's answer)").inner_text() == record["plan"]

    rows = page.locator("#transcript table.subtasks tbody tr")
    assert rows.count() == 3
    for index, (subtask, result) in enumerate(
        zip(decomposition["subtasks"], decomposition["results"], strict=True)
    ):
        cells = rows.nth(index).locator("td").all_inner_texts()
        assert cells == [
            str(subtask["id"]),
            subtask["title"],
            json.dumps(subtask["dependencies"]),
            "done · answered",
            result["summary"],
            json.dumps(result["memory"], separators=(",", ":"))
            + (f"\nmemory answer: {result['memory_error']}" if result["memory_error"] else ""),
        ]
        assert rows.nth(index).get_attribute("class") == "pass"
    memory = open_details(page, "Working memory at the end").inner_text()
    assert json.loads(memory) == decomposition["working_memory"]
    assert transcript.locator("summary", has_text="held no decomposition").count() == 0
    assert [r["memory_error"] for r in decomposition["results"]] == [  # the third kept nothing
        None,
        None,
        "no JSON object in the answer",
    ]

    headings = transcript.locator("h4.role").all_inner_texts()
    assert headings == ["planner"] + [
        f"sub-agent {s['id']}: {s['title']}" for s in decomposition["subtasks"]
    ]
    heads = transcript.locator(".turn .turnhead").all_inner_texts()
    assert len(heads) == len(record["turns"])
    shown: dict[str, list[int]] = {}
    for head, turn in zip(heads, record["turns"], strict=True):
        assert head.startswith(f"Turn {turn['turn']} · {turn['role']}")
        assert ("· memory question" in head) == bool(turn.get("memory_extraction"))
        tokens = TOKENS.search(head)
        assert tokens is not None, head
        counted = shown.setdefault(turn["role"], [0, 0])
        counted[0] += int(tokens[1])
        counted[1] += int(tokens[2])
    by_role = record["usage_by_role"]
    assert shown == {
        role: [usage["input_tokens"], usage["output_tokens"]] for role, usage in by_role.items()
    }
    assert list(shown) == ["planner", "sub-agent 1", "sub-agent 2", "sub-agent 3"]
    row = page.locator(f'#rollout-table tbody tr[data-id="decomposed{ROLLOUT}0"]')
    every_role = sum(u["input_tokens"] + u["output_tokens"] for u in by_role.values())
    assert row.locator("td").nth(10).inner_text() == str(every_role)  # the Tokens column
    names = transcript.locator(".call .callhead b").all_inner_texts()
    assert names == [c["name"] for t in record["turns"] for c in t["tool_calls"]]
    assert transcript.locator("pre.final").inner_text() == record["final_answer"]

    page.mouse.wheel(0, -100_000)  # at the top: the sticky header where it belongs
    page.screenshot(path=str(SCREENSHOTS / "decomposing.png"), full_page=True)
    assert recorder.errors == []
    page.close()


def test_a_bad_decomposition_shows_why_the_planner_held_none(
    chromium: Any, report: Path, runs: dict[str, Path]
) -> None:
    [record] = records(runs["bad"])
    page, recorder = open_rollout(chromium, report, "bad")
    transcript = page.locator("#transcript")
    text = transcript.inner_text()
    assert "stop: bad_decomposition · failure: bad_decomposition" in text
    assert f"Incomplete: {record['failure_reason']}" in text
    why = open_details(page, "Why the planner's answers held no decomposition")
    assert why.inner_text().splitlines() == record["decomposition"]["errors"]
    assert why.inner_text().splitlines() == ["no JSON object in the answer"] * 3
    assert transcript.locator("table.subtasks").count() == 0  # no empty table, no memory
    assert "No subtask: the planner's answers held no decomposition." in text
    assert transcript.locator("summary", has_text="Working memory").count() == 0
    assert transcript.locator("h4.role").all_inner_texts() == ["planner"]
    answers = transcript.locator(".turn pre.text").all_inner_texts()
    assert answers == [t["text"] for t in record["turns"]]
    page.mouse.wheel(0, -100_000)  # at the top: the sticky header where it belongs
    page.screenshot(path=str(SCREENSHOTS / "bad_decomposition.png"), full_page=True)
    assert recorder.errors == []
    page.close()


def test_a_planner_react_rollout_shows_its_plan(
    chromium: Any, report: Path, runs: dict[str, Path]
) -> None:
    [record] = records(runs["planned"])
    page, recorder = open_rollout(chromium, report, "planned")
    transcript = page.locator("#transcript")
    assert "Orchestrator: planner_react" in transcript.inner_text()
    assert open_details(page, "Plan (the planner's answer)").inner_text() == PLAN_TEXT
    executor = open_details(page, "The executor's user message (the task with the plan)")
    assert PLAN_TEXT in executor.inner_text()
    assert transcript.locator("table.subtasks").count() == 0
    heads = transcript.locator(".turn .turnhead").all_inner_texts()
    assert [h.split(" · ")[1] for h in heads] == [t["role"] for t in record["turns"]]
    page.mouse.wheel(0, -100_000)  # at the top: the sticky header where it belongs
    page.screenshot(path=str(SCREENSHOTS / "planner_react.png"), full_page=True)
    assert recorder.errors == []
    page.close()
