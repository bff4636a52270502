"""``eog-core report`` on real run folders: the page's numbers are those of ``score`` and ``compare``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core.local import demo_paths
from tests.report.conftest import cli, score_json
from tests.report.page import as_number, json_block, metric_cells, transcripts
from tests.report.run_folders import BIG_INTEGER, HOSTILE, hostile_copy

RATES = ("run_success_rate", "task_success_rate", "macro_success_rate", "verifier_pass_rate")
COUNTS = ("tasks_scored", "runs_scored", "runs_errored")


@pytest.fixture(scope="module")
def report(
    run_folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("report")
    page, bands = out / "report.html", out / "bands.json"
    done = cli(
        "report",
        run_folders["correct"],
        run_folders["nothing"],
        "-o",
        page,
        "--title",
        "Demo <b>run</b>",
        "--price",
        "demo-correct=2,8,0.5",
        "--price",
        "demo-answer=2,8",
        "--bands-json",
        bands,
        "--tasks",
        demo_paths().task,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    return {
        "html": page.read_text(encoding="utf-8"),
        "bands": json.loads(bands.read_text()),
        "path": page,
    }


@pytest.mark.parametrize("policy", ["strict", "parity"])
@pytest.mark.parametrize(("run", "label"), [("0", "correct"), ("1", "nothing")])
def test_overview_numbers_equal_score_json(
    report: dict[str, Any], run_folders: dict[str, Path], run: str, label: str, policy: str
) -> None:
    corrected = score_json(run_folders[label] / "rollouts.jsonl")
    cells = metric_cells(report["html"])
    groups = {"overall:all": corrected["overall"]}
    groups |= {f"domain:{g['name']}": g for g in corrected["by_domain"]}
    groups |= {f"mode:{g['name']}": g for g in corrected["by_mode"]}
    for group, numbers in groups.items():
        stats = numbers[policy]
        for metric in RATES:
            assert stats[metric] == as_number(cells[(run, policy, group, metric)]), (group, metric)
        for metric in COUNTS:
            assert stats[metric] == int(cells[(run, policy, group, metric)]), (group, metric)
    for entry in corrected["overall"][policy]["pass_at"]:
        assert entry["value"] == as_number(cells[(run, policy, "all", f"pass_at_{entry['k']}")])
    expected_hat = 1.0 if label == "correct" else 0.0
    assert [as_number(cells[(run, policy, "all", f"pass_hat_{k}")]) for k in (1, 2, 3)] == [
        expected_hat
    ] * 3


def test_every_rollout_is_a_row_with_its_outcome(report: dict[str, Any]) -> None:
    rows = json_block(report["html"], "eog-rows")
    assert [(r["run"], r["repeat"], r["strict"], r["parity"]) for r in rows] == [
        (0, 0, True, True),
        (0, 1, True, True),
        (0, 2, True, True),
        (1, 0, False, False),
        (1, 1, False, False),
        (1, 2, False, False),
    ]
    assert {r["stop_reason"] for r in rows} == {"answered"}
    assert [r["calls"] for r in rows] == [9, 9, 9, 0, 0, 0]


def test_transcript_holds_every_tool_call_prompts_and_both_verdict_tables(
    report: dict[str, Any], run_folders: dict[str, Path]
) -> None:
    details = transcripts(report["html"])
    record = json.loads((run_folders["correct"] / "rollouts.jsonl").read_text().splitlines()[0])
    detail = details[0]
    names = [c["name"] for t in detail["turns"] for c in t["tool_calls"]]
    assert names == [c["name"] for t in record["turns"] for c in t["tool_calls"]]
    assert len(names) == 9
    assert detail["user_prompt"] and "Harbor Lane" in detail["user_prompt"]
    assert detail["final_answer"] == record["final_answer"]
    strict = detail["verdicts"]["strict"]
    assert [
        (v["name"], v["query"], v["expected"], v["actual"], v["comparison_type"], v["passed"])
        for v in strict
    ] == [
        (r["name"], r["query"], r["expected"], r["actual"], r["comparison_type"], r["passed"])
        for r in record["results"]
    ]
    assert [v["counted"] for v in detail["verdicts"]["parity"]] == [
        r["counted"] for r in record["parity"]["results"]
    ]


def test_comparison_equals_compare_json(
    report: dict[str, Any], run_folders: dict[str, Path]
) -> None:
    for policy in ("strict", "parity"):
        done = cli(
            "compare",
            run_folders["correct"] / "rollouts.jsonl",
            run_folders["nothing"] / "rollouts.jsonl",
            "--json",
            "--policy",
            policy,
        )
        assert done.returncode == 0, done.stderr
        expected = json.loads(done.stdout)
        html = report["html"]
        start = html.index(f'<article class="comparison" data-policy="{policy}" data-b="1">')
        article = html[start : html.index("</article>", start)]
        assert f'data-metric="difference" data-value="{expected["difference"]}"' in article
        assert f'data-metric="mcnemar_p" data-value="{expected["mcnemar_p"]}"' in article
        assert "B wins 0 · loses 1 · ties 0" in article


def test_bands_json_puts_each_task_in_its_band(report: dict[str, Any]) -> None:
    bands = report["bands"]
    assert bands["format"] == "eog_core.task_bands/1"
    by_run = {r["run"].split(" ")[0]: r["policies"]["strict"] for r in bands["runs"]}
    members = {
        run: {b["name"]: [t["task_id"] for t in b["tasks"]] for b in p["bands"]}
        for run, p in by_run.items()
    }
    assert members["correct"] == {
        "never": [],
        "mixed": [],
        "always": ["demo_csm_fleet_renewal"],
        "unscored": [],
    }
    assert members["nothing"]["never"] == ["demo_csm_fleet_renewal"]
    assert by_run["correct"]["flip_rate"] == 0.0
    assert json_block(report["html"], "eog-bands") == bands


def test_cost_counts_cached_tokens_at_their_price(
    report: dict[str, Any], run_folders: dict[str, Path]
) -> None:
    records = [
        json.loads(line)
        for line in (run_folders["correct"] / "rollouts.jsonl").read_text().splitlines()
    ]
    rows = [r for r in json_block(report["html"], "eog-rows") if r["run"] == 0]
    for record, row in zip(records, rows, strict=True):
        usage = record["usage"]
        assert usage["cached_tokens"] > 0
        by_hand = (
            (usage["input_tokens"] - usage["cached_tokens"]) * 2
            + usage["cached_tokens"] * 0.5
            + usage["output_tokens"] * 8
        ) / 1e6
        assert row["cost"] == pytest.approx(by_hand, rel=1e-12)


def test_page_is_self_contained(report: dict[str, Any]) -> None:
    html = report["html"]
    page = _outside_data(html).replace('xmlns="http://www.w3.org/2000/svg"', "")
    for reference in ("://", "src=", "<link", "@import", "url(", "@font-face"):
        assert reference not in page, reference
    assert "Demo &lt;b&gt;run&lt;/b&gt;" in html and "Demo <b>run</b>" not in html


def _outside_data(html: str) -> str:
    """The page without its JSON data blocks (data may mention URLs as text)."""
    start = html.index('<script type="application/json"')
    return html[:start] + html[html.index("<script>", start) :]


def test_upstream_folder_gives_the_numbers_of_score(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    upstream = run_folders["correct"] / "upstream"
    done = cli("report", upstream, "-o", tmp_path / "up.html")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "up.html").read_text()
    corrected = score_json(upstream)
    cells = metric_cells(html)
    for metric in RATES:
        assert corrected["overall"]["parity"][metric] == as_number(
            cells[("0", "parity", "overall:all", metric)]
        )
    assert [r["parity"] for r in json_block(html, "eog-rows")] == [True, True, True]
    records = sorted(
        (
            json.loads(line)
            for line in (run_folders["correct"] / "rollouts.jsonl").read_text().splitlines()
        ),
        key=lambda r: r["repeat"],
    )
    details = transcripts(html)
    for record, detail in zip(records, details, strict=True):  # the transcripts of upstream's files
        calls = [c for t in record["turns"] for c in t["tool_calls"]]
        shown = [c for t in detail["turns"] for c in t["tool_calls"]]
        assert [(c["name"], json.loads(c["arguments"])) for c in shown] == [
            (c["name"], json.loads(c["arguments"])) for c in calls
        ]
        assert all(c["observation"] and c["gym"] == "demo-csm-server" for c in shown)
        assert detail["final_answer"] == record["final_answer"]
        assert [v["expected"] for v in detail["verdicts"]["parity"]] == [
            v["expected"] for v in record["parity"]["verification_results"].values()
        ]
        assert detail["user_prompt"] and "Harbor Lane" in detail["user_prompt"]


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["report", "/nonexistent/run", "-o", "{tmp}/r.html"], 3, "no such file or folder"),
        (["report", "{tmp}", "-o", "{tmp}/r.html"], 3, "not a run: expected a run folder"),
        (["report", "{tmp}", "-o", "{tmp}/r.html", "--price", "gpt=1"], 2, "MODEL=IN,OUT[,CACHED]"),
    ],
)
def test_bad_input_is_one_line_and_a_defined_code(
    tmp_path: Path, argv: list[str], code: int, words: str
) -> None:
    done = cli(*(a.format(tmp=tmp_path) for a in argv))
    assert done.returncode == code
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or code == 2
    assert not (tmp_path / "r.html").exists()


def test_without_the_extra_it_says_what_to_install(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['jinja2'] = None\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")]),
    }
    done = cli("report", run_folders["correct"], "-o", tmp_path / "r.html", env=env)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        "eog-core report: MissingExtraError: the report needs Jinja2: pip install 'eog-core[report]'"
    ]
    assert not (tmp_path / "r.html").exists()


def test_hostile_model_text_stays_text_and_newer_record_fields_are_shown(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    run = hostile_copy(run_folders["correct"], tmp_path / "hostile")
    done = cli("report", run, "-o", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<script>window.pwned" not in html and "<img src=x" not in html
    assert html.count("<script") == 6  # five JSON blocks and the page's own script
    details = transcripts(html)
    assert details[0]["final_answer"] == HOSTILE
    assert details[0]["turns"][0]["tool_calls"][0]["observation"] == HOSTILE
    assert details[1]["verdicts"]["strict"][0]["actual"] == BIG_INTEGER
    rows = json_block(html, "eog-rows")
    assert [r["stop_reason"] for r in rows] == ["answered", "truncated", "answered"]
    assert [(r["strict"], r["failure_kind"]) for r in rows][2] == (None, "malformed_tool_call")
    corrected = score_json(run / "rollouts.jsonl")
    cells = metric_cells(html)
    assert (
        corrected["overall"]["strict"]["runs_errored"]
        == int(cells[("0", "strict", "overall:all", "runs_errored")])
        == 1
    )
    assert corrected["overall"]["strict"]["errors_by_kind"] == [["malformed_tool_call", 1]]
    assert '<span class="kind" data-kind="malformed_tool_call">malformed_tool_call 1</span>' in html


def test_bootstrap_settings_reach_the_comparison(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    a, b = run_folders["correct"] / "rollouts.jsonl", run_folders["nothing"] / "rollouts.jsonl"
    done = cli("report", a, b, "-o", tmp_path / "r.html", "--n-boot", "300", "--seed", "7")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    expected = json.loads(
        cli(
            "compare", a, b, "--json", "--policy", "strict", "--n-boot", "300", "--seed", "7"
        ).stdout
    )
    assert f'data-metric="ci95" data-value="{expected["ci95"][0]},{expected["ci95"][1]}"' in html
    assert "300 resamples, seed 7" in html


def test_written_page_equals_rendered_page_and_lone_surrogates_do_not_stop_it(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    from eog_core.report import build_content, load_run, render_html, write_html

    run = hostile_copy(run_folders["correct"], tmp_path / "run")
    lines = (run / "rollouts.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["turns"][0]["text"] = "half a pair: \ud800"
    lines[0] = json.dumps(first)  # written as the escape \\ud800, which json reads back
    (run / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    content = build_content([load_run(run)], title="t")
    size = write_html(content, tmp_path / "r.html")
    written = (tmp_path / "r.html").read_bytes()
    assert size == len(written)
    assert written.decode("utf-8") == render_html(content)
    assert transcripts(written.decode("utf-8"))[0]["turns"][0]["text"] == "half a pair: \ud800"


def test_a_run_with_nothing_evaluated_still_reports_its_gaps(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    records = [
        json.loads(line)
        for line in (run_folders["nothing"] / "rollouts.jsonl").read_text().splitlines()
    ]
    for record in records:
        for verdict in (record, record["parity"]):
            verdict |= {
                "evaluation_completed": False,
                "success": False,
                "failure_kind": "gym_unreachable",
            }
        record["status"] = "incomplete"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = cli("report", tmp_path / "run", "-o", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    cells = metric_cells(html)
    assert cells[("0", "strict", "overall:all", "runs_errored")] == "3"
    assert cells[("0", "strict", "overall:all", "run_success_rate")] == "None"
    assert '<span class="kind" data-kind="gym_unreachable">gym_unreachable 3</span>' in html
    assert "-%" not in html
