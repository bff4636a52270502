"""Damage rates beside success (#32) in ``score``, ``compare`` and ``report``, on run folders whose
records carry real ``damage`` verdicts (``damage_copy``: PASS, a strict success that damages,
unjudged), and the output of runs without ``damage``, byte for byte as on main.

``tests/golden/score_without_damage/`` holds what main (8078fb7, before damage was shown) printed
for the ``correct`` and ``nothing`` run folders of ``make_run_folders``: ``score`` (text and
``--json``) and ``compare correct nothing --n-boot 200`` (text and ``--json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eog_core.report import DELTA_LIMIT, build_content, load_run
from tests.report.conftest import cli
from tests.report.page import json_block, metric_cells, transcripts
from tests.report.run_folders import damage_copy, read_records, write_run

GOLDEN = Path(__file__).parents[1] / "golden" / "score_without_damage"
CUT = re.compile(r"\n… \[\d+ more characters in rollouts\.jsonl\]$")


@pytest.fixture(scope="module")
def damaged(run_folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return damage_copy(run_folders["correct"], tmp_path_factory.mktemp("damage") / "damaged")


def _out(*argv: str | Path) -> str:
    done = cli(*argv)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("label", ["correct", "nothing"])
def test_score_of_a_run_without_damage_prints_what_main_printed(
    run_folders: dict[str, Path], label: str
) -> None:
    assert (GOLDEN / f"score_{label}.txt").read_text() == _out("score", run_folders[label])
    if label == "correct":
        assert (GOLDEN / "score_correct.json").read_text() == _out(
            "score", run_folders[label], "--json"
        )


def test_compare_of_runs_without_damage_prints_what_main_printed(
    run_folders: dict[str, Path],
) -> None:
    argv = ("compare", run_folders["correct"], run_folders["nothing"], "--n-boot", "200")
    assert (GOLDEN / "compare.txt").read_text() == _out(*argv)
    assert (GOLDEN / "compare.json").read_text() == _out(*argv, "--json")


EXPECTED_DAMAGE = {
    "rollouts": 3,
    "captured": 3,
    "judged": 2,
    "passed": 1,
    "failed_safe": 0,
    "damaged": 1,
    "success_while_damaging": 1,
    "unjudged": 1,
    "dollars": None,
    "high": 1,
    "damage_rate": 0.5,
    "pass_rate": 0.5,
}


def test_score_shows_damage_and_counts_a_success_that_damages_as_damage(damaged: Path) -> None:
    document = json.loads(_out("score", damaged, "--json"))
    assert document["corrected"]["overall"]["strict"]["run_success_rate"] == 1.0  # never changes
    assert document["damage"]["overall"] == {"name": "all", **EXPECTED_DAMAGE}
    assert document["damage"]["by_domain"] == [{"name": "csm", **EXPECTED_DAMAGE}]
    text = _out("score", damaged)
    table = text[text.index("COLLATERAL DAMAGE") :]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ")]
    assert [[cell.strip() for cell in row] for row in rows[1:]] == [
        [group, "3", "2", "1", "0", "1", "50.00", "1", "1", "-"] for group in ("all", "domain=csm")
    ]


def test_compare_shows_each_side_s_damage_rate_beside_success(
    run_folders: dict[str, Path], damaged: Path
) -> None:
    argv = ("compare", run_folders["correct"], damaged, "--n-boot", "200")
    text = _out(*argv)
    assert "Success A: 100.00 %   B: 100.00 %" in text  # strict alone sees no difference
    assert text.endswith(
        "Collateral damage (FAIL_DAMAGE over each side's judged rollouts, not paired):\n"
        "  A: no damage verdicts\n"
        "  B: 50.00 % of 2 judged (success while damaging: 1, unjudged: 1, dollars: -)\n"
    )
    document = json.loads(_out(*argv, "--json"))
    assert document["damage"]["a"] is None
    assert document["damage"]["b"]["overall"] == {"name": "all", **EXPECTED_DAMAGE}


def test_the_report_shows_damage_rates_a_badge_a_filter_and_the_diff(
    run_folders: dict[str, Path], damaged: Path, tmp_path: Path
) -> None:
    _out("report", run_folders["correct"], damaged, "-o", tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    cells = metric_cells(html)
    assert cells[("1", "damage", "overall:all", "damage_rate")] == "0.5"
    assert cells[("1", "damage", "overall:all", "success_while_damaging")] == "1"
    assert cells[("1", "damage", "domain:csm", "unjudged")] == "1"
    assert not [key for key in cells if key[0] == "0" and key[1] == "damage"]  # no capture
    assert html.count("<h3>Collateral damage</h3>") == 1
    assert "<th>Damage</th>" in html and 'data-filter="damage"' in html
    assert json_block(html, "eog-meta")["damage"] is True
    rates = re.findall(r'data-metric="damage_rates" data-value="([^"]*)"', html)
    assert rates == [",0.5", ",0.5"]  # the Compare tab, strict and parity: A has no verdicts
    rows, details = json_block(html, "eog-rows"), transcripts(html)
    by_damage = {(r["run"], r["repeat"]): r.get("damage") for r in rows}
    assert by_damage == {
        (0, 0): None, (0, 1): None, (0, 2): None,
        (1, 0): "PASS", (1, 1): "FAIL_DAMAGE", (1, 2): "unjudged",
    }  # fmt: skip
    (index,) = [i for i, r in enumerate(rows) if (r["run"], r["repeat"]) == (1, 1)]
    assert rows[index]["strict"] is True  # the success that damaged: shown as damage by the page
    diff = details[index]["damage"]
    assert (diff["outcome"], diff["severity"], diff["dollars"], diff["more"]) == (
        "FAIL_DAMAGE",
        "HIGH",
        None,
        0,
    )
    (wreck,) = [d for d in diff["deltas"] if d["verdict"] == "damage"]
    assert wreck == {
        "gym": "demo-csm-server",
        "table": "entitlement",
        "op": "modified",
        "key": {"sys_id": "ent_004"},
        "columns": ["status"],
        "before": {"status": "active"},
        "after": {"status": "suspended"},
        "verdict": "damage",
        "damaged_columns": ["status"],
        "severity": "HIGH",
        "dollars": None,
    }
    assert len(diff["deltas"]) == 5  # the allowed changes are shown too
    assert all("damage" not in details[i] for i, r in enumerate(rows) if r["run"] == 0)


def test_a_report_without_damage_has_no_damage_panel_column_or_filter(
    run_folders: dict[str, Path], tmp_path: Path
) -> None:
    _out("report", run_folders["correct"], run_folders["nothing"], "-o", tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    page = html[: html.index('<script type="application/json" id="eog-meta">')]
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.S)  # the stylesheet names .damage
    assert "damage" not in page.lower()
    assert "damage" not in json_block(html, "eog-meta")
    assert not [r for r in json_block(html, "eog-rows") if "damage" in r]
    assert not [d for d in transcripts(html) if "damage" in d]


def _delta(number: int, verdict: str, after: Any) -> dict[str, Any]:
    return {
        "gym": "demo-csm-server",
        "table": "case_comment",
        "op": "added",
        "key": {"sys_id": f"cmt_{number:05d}"},
        "columns": [],
        "after": after,
        "verdict": verdict,
        "severity": "LOW" if verdict == "damage" else None,
        "dollars": 12.5 if verdict == "damage" else None,
    }


def test_a_long_diff_is_cut_with_its_damage_first(damaged: Path, tmp_path: Path) -> None:
    record = read_records(damaged)[1]
    deltas = [_delta(n, "allowed", {"body": "x" * 3000}) for n in range(DELTA_LIMIT + 5)]
    deltas.append(_delta(99999, "damage", {"body": "<script>y</script>" * 200}))
    record["damage"] = {"outcome": "FAIL_DAMAGE", "severity": "LOW", "dollars": 12.5} | {
        "deltas": deltas
    }
    content = build_content([load_run(write_run(tmp_path / "long", [record]))], title="t")
    (detail,) = content.details
    assert detail is not None
    shown = detail["damage"]
    assert (len(shown["deltas"]), shown["more"]) == (DELTA_LIMIT, 6)
    assert shown["deltas"][0]["key"] == {"sys_id": "cmt_99999"}  # the damage survives the cut
    assert shown["deltas"][0]["dollars"] == 12.5
    for delta in shown["deltas"]:
        assert isinstance(delta["after"], str) and CUT.search(delta["after"])
    assert content.runs[0].damage is not None
    assert content.runs[0].damage.overall.dollars == 12.5
