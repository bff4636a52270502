"""The page's edges (#35): runs that share only some domains, large runs split into blocks, what
the page cuts, ids no text can break, the CSP, prompts, deep-link names, the Compare heading."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from eog_core.local import demo_paths
from eog_core.report import (
    DETAILS_BLOCK_BYTES,
    OBSERVATION_LIMIT,
    build_content,
    load_run,
    render_html,
    write_html,
)
from eog_core.tasks import load_tasks
from tests.report.conftest import cli
from tests.report.page import json_block, transcripts
from tests.report.run_folders import large_copy, read_records, write_run

CUT = re.compile(r"\n… \[\d+ more characters in rollouts\.jsonl\]$")


def renamed(records: list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    return [copy.deepcopy(r) | fields for r in records]


def test_a_full_baseline_against_a_run_of_fewer_domains(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    correct = read_records(run_folders["correct"])
    full = write_run(
        tmp_path / "full", correct + renamed(correct, domain="hr", task_id="hr_only_task")
    )
    done = cli("report", full, run_folders["nothing"], "-o", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    table = html[html.index('<table class="num grid side" data-policy="strict">') :]
    table = table[: table.index("</table>")]
    hr = re.search(r"<tr><th>hr</th>(.*?)</tr>", table, re.S)
    assert hr is not None
    cells = re.findall(r"<td>(.*?)</td>", hr.group(1), re.S)
    assert [c.split(" ")[0] for c in cells] == ["100.00%", "-"]
    done = cli("report", run_folders["nothing"], full, "-o", tmp_path / "r2.html")
    assert done.returncode == 0, done.stderr


def test_transcripts_are_split_into_blocks_at_the_bound_and_read_back_whole(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    run = large_copy(run_folders["correct"], tmp_path / "large", 60)
    content = build_content([load_run(run)], title="large")
    bound = 100_000
    size = write_html(content, tmp_path / "r.html", block_bytes=bound)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert size == len(html.encode("utf-8"))
    blocks = json_block(html, "eog-meta")["details"]
    assert len(blocks) > 5
    assert all(block_size <= bound for _, _, block_size in blocks)
    assert sum(count for _, count, _ in blocks) == 60
    shown = transcripts(html)  # every block, in order, is the list of transcripts
    assert shown == json.loads(json.dumps(content.details))
    rows = json_block(html, "eog-rows")
    assert [d["turns"][0]["tool_calls"][0]["observation"].split(" ")[1] for d in shown] == [
        str(int(r["task_id"][6:])) for r in rows
    ]
    assert render_html(content, block_bytes=bound) == html
    default = render_html(content)  # at the default bound (16 MB) one block holds them all
    assert len(json_block(default, "eog-meta")["details"]) == 1
    assert DETAILS_BLOCK_BYTES == 16 * 2**20


def test_a_transcript_larger_than_the_bound_is_a_block_of_its_own(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    run = large_copy(run_folders["correct"], tmp_path / "large", 3)
    content = build_content([load_run(run)], title="large")
    html = render_html(content, block_bytes=1000)
    assert [(first, count) for first, count, _ in json_block(html, "eog-meta")["details"]] == [
        (0, 1),
        (1, 1),
        (2, 1),
    ]
    assert len(transcripts(html)) == 3


def test_a_page_past_the_large_bound_says_so_in_the_page_and_the_log(
    run_folders: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = large_copy(run_folders["correct"], tmp_path / "large", 20)
    content = build_content([load_run(run)], title="large")
    with caplog.at_level(logging.WARNING, logger="eog_core.report"):
        write_html(content, tmp_path / "r.html", block_bytes=50_000, large_page_bytes=200_000)
    html = (tmp_path / "r.html").read_text()
    notes = re.findall(r'<p class="warning size">(.*?)</p>', html)
    blocks = len(json_block(html, "eog-meta")["details"])
    assert len(notes) == 1 and f"(its transcripts in {blocks} blocks)" in notes[0]
    assert notes[0].startswith("This page holds 0.") and "a browser may be slow" in notes[0]
    assert [r.getMessage() for r in caplog.records if "page holds" in r.getMessage()] == [notes[0]]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="eog_core.report"):
        quiet = render_html(content)
    assert 'class="warning size"' not in quiet
    assert [r for r in caplog.records if "page holds" in r.getMessage()] == []


def _long_record(source: Path) -> dict[str, Any]:
    record = read_records(source)[0]
    rows = [[f"row {i}", i] for i in range(400)]
    record["results"][0]["actual"] = rows  # a verifier's rows
    record["parity"]["results"][0]["expected"] = {"rows": rows}
    record["context_overflow"] = "overflow " * 1000
    call = record["turns"][0]["tool_calls"][0]
    call["name"] = "tool_" + "n" * 5000
    call["gym"] = "gym_" + "g" * 5000
    record["turns"][0]["finish_reason"] = "stop" * 1000
    record["turns"][0]["usage"] |= {
        "provider_details": {"blob": "b" * 10_000},
        "input_tokens_details": [1] * 3000,
    }
    return record


def test_every_long_value_of_a_transcript_is_cut_and_usage_keeps_its_token_counts(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    record = _long_record(run_folders["correct"])
    run = write_run(tmp_path / "long", [record])
    detail = transcripts(render_html(build_content([load_run(run)], title="t")))[0]
    cut_values = [
        detail["verdicts"]["strict"][0]["actual"],
        detail["verdicts"]["parity"][0]["expected"],
        detail["context_overflow"],
        detail["turns"][0]["tool_calls"][0]["name"],
        detail["turns"][0]["tool_calls"][0]["gym"],
        detail["turns"][0]["finish_reason"],
    ]
    for value in cut_values:
        assert isinstance(value, str) and CUT.search(value), value[:80]
        assert len(CUT.sub("", value)) == OBSERVATION_LIMIT
    assert detail["verdicts"]["strict"][0]["actual"].startswith('[["row 0", 0], ["row 1", 1]')
    usage = record["turns"][0]["usage"]
    assert detail["turns"][0]["usage"] == {
        key: usage[key]
        for key in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
    }
    assert detail["verdicts"]["strict"][1]["actual"] == record["results"][1]["actual"]  # short


HOSTILE_IDS = {
    "sentinel": "\x00eog-details\x00",
    "surrogate": "task \udc80 half",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_IDS))
def test_a_task_id_or_model_name_no_page_slot_or_deep_link_can_trip_on(
    run_folders: dict[str, Path], tmp_path: Path, name: str
) -> None:
    text = HOSTILE_IDS[name]
    records = renamed(read_records(run_folders["correct"]), task_id=text, model=f"m {text}")
    run = write_run(tmp_path / "run", records)
    content = build_content([load_run(run)], title=f"title {text}")
    size = write_html(content, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_bytes()
    assert size == len(page)
    html = page.decode("utf-8")
    assert len(transcripts(html)) == 3
    rows = json_block(html, "eog-rows")
    assert [r["task_id"] for r in rows] == [text] * 3
    for row in rows:
        row["id"].encode("utf-8")  # a deep link's id is valid Unicode (encodeURIComponent)
    assert len({r["id"] for r in rows}) == 3
    assert rows[0]["id"].startswith("run/oracle/csm/task ") or name == "sentinel"


def test_bands_json_of_a_task_id_with_a_lone_surrogate_reads_back_exactly(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    text = HOSTILE_IDS["surrogate"]
    run = write_run(tmp_path / "run", renamed(read_records(run_folders["correct"]), task_id=text))
    bands = tmp_path / "bands.json"
    done = cli("report", run, "-o", tmp_path / "r.html", "--bands-json", bands)
    assert done.returncode == 0, done.stderr
    document = json.loads(bands.read_bytes().decode("utf-8"))
    always = document["runs"][0]["policies"]["strict"]["bands"][2]
    assert always["name"] == "always"
    assert [t["task_id"] for t in always["tasks"]] == [text]


def _csp(html: str) -> dict[str, list[str]]:
    match = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert match is not None
    directives = [d.split() for d in match.group(1).split(";")]
    return {d[0]: d[1:] for d in directives if d}


def test_the_csp_runs_only_the_page_s_own_script_and_forbids_forms_and_base(
    run_folders: dict[str, Path],
) -> None:
    html = render_html(build_content([load_run(run_folders["correct"])], title="t"))
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1  # every other script element is JSON data
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    csp = _csp(html)
    assert csp["script-src"] == [f"'sha256-{digest}'"]
    assert csp["default-src"] == ["'none'"]
    assert csp["form-action"] == ["'none'"]
    assert csp["base-uri"] == ["'none'"]
    assert not [d for d, v in csp.items() if "'unsafe-inline'" in v and d != "style-src"]


def test_the_page_says_where_prompts_come_from(
    run_folders: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    source = load_run(run_folders["correct"])
    tasks = {t.task_id: t for t in load_tasks(demo_paths().task) if t.task_id}
    with caplog.at_level(logging.WARNING, logger="eog_core.report"):
        without = render_html(build_content([source], title="t"))
        given = render_html(build_content([source], title="t", tasks=tasks))
        other = render_html(build_content([source], title="t", tasks={"another": None}))
    note = re.compile(r'<p class="sub" id="prompts-note">(.*?)</p>', re.S)
    assert "Give <code>--tasks PATH</code>" in note.findall(without)[0]
    assert note.findall(given) == []
    assert note.findall(other)[0].startswith("3 of 3 rollouts show no prompts")
    assert [r.getMessage() for r in caplog.records] == [
        "the page shows no prompts (the records do not hold them): give --tasks PATH, "
        "the run's task files",
        "3 of 3 rollouts show no prompts: their task ids are not in --tasks",
    ]


def test_deep_links_name_the_run_and_the_comparison_heading_is_a_then_b(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    twin = write_run(tmp_path / "twin" / "correct", read_records(run_folders["correct"]))
    content = build_content(
        [load_run(run_folders["correct"]), load_run(run_folders["nothing"]), load_run(twin)],
        title="t",
        n_boot=200,
    )
    html = render_html(content)
    ids = [r["id"] for r in json_block(html, "eog-rows")]
    prefix = "/oracle/csm/demo_csm_fleet_renewal/"
    assert ids == [
        f"{run}{prefix}{k}" for run in ("correct", "nothing", "correct-2") for k in range(3)
    ]
    assert [r["name"] for r in json_block(html, "eog-meta")["runs"]] == [
        "correct",
        "nothing",
        "correct-2",
    ]
    headings = re.findall(r'<article class="comparison"[^>]*>\s*<h3>(.*?)</h3>', html)
    assert headings[0] == "A correct (demo-correct) vs B nothing (demo-answer) · strict"
    article = html[html.index('<article class="comparison" data-policy="strict" data-b="1">') :]
    assert re.search(r"<dt>Success A / B</dt><dd>100.00% / 0.00%</dd>", article)
