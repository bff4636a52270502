"""How every reader of a run reads its lines (``eog_core._jsonl``), and what a path given to
``score``, ``compare`` or ``report`` holds (:func:`eog_core.metrics.locate_run`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core._jsonl import CUT_NOTE, MAX_RECORD_DEPTH, JsonLineError, cut_deep, jsonl_values
from eog_core.metrics import (
    MetricsError,
    expected_task_ids,
    locate_run,
    read_run,
    read_verdicts,
    runs_from_verdicts,
)

SEPARATORS = "a\u2028b\u2029c\u0085d"  # raw in a JSON string: valid JSON, what orjson and Go write


def verdict(task_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "domain": "csm",
        "mode": "oracle",
        "repeat": 0,
        "policy": "strict",
        "success": True,
        "pass_rate": 1.0,
        "evaluation_completed": True,
        "parity": {"success": False, "pass_rate": 0.5},
        **extra,
    }


def raw_line(record: dict[str, Any]) -> bytes:
    """The record as one line with its separators raw (json.dumps would write them as escapes)."""
    return json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"


def deep(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def depth_of(value: Any) -> int:
    levels = 0
    while isinstance(value, list):
        value, levels = value[0], levels + 1
    return levels


def test_raw_line_separators_stay_inside_their_record(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_bytes(raw_line(verdict("t1", final_answer=SEPARATORS)) + raw_line(verdict("t2")))
    assert len(path.read_text(encoding="utf-8").splitlines()) == 5  # what splitlines() does
    records = read_verdicts(path)
    assert [(r.task_id, r.line) for r in records] == [("t1", 1), ("t2", 2)]
    values = [value for _, _, value in jsonl_values(path.read_bytes())]
    assert values[0]["final_answer"] == SEPARATORS


def test_a_crlf_line_end_is_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_bytes(json.dumps(verdict("t1")).encode() + b"\r\n\r\n")
    assert [r.task_id for r in read_verdicts(path)] == ["t1"]


def test_task_rows_are_read_the_same_way(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(
        raw_line({"task_id": "t1", "prompt": SEPARATORS}) + raw_line({"task_id": "t2"})
    )
    assert expected_task_ids(rows) == {"t1", "t2"}


@pytest.mark.parametrize("levels", [MAX_RECORD_DEPTH + 50, 990, 1100, 5000])
def test_a_deep_value_is_read_cut_and_the_verdict_counts(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "v.jsonl"
    line = json.dumps(verdict("t1", results=[{"actual": "@"}])).replace('"@"', deep(levels))
    path.write_text(line + "\n" + json.dumps(verdict("t2")) + "\n", encoding="utf-8")
    [run_1, run_2] = runs_from_verdicts(read_verdicts(path))
    assert run_1.strict is not None and run_1.strict.success and run_2.task_id == "t2"
    [(_, _, value), _] = list(jsonl_values(path.read_bytes()))
    actual = value["results"][0]["actual"]
    inner = actual
    while isinstance(inner, list):
        inner = inner[0]
    # the record's own three levels and the value's lists make MAX_RECORD_DEPTH; then the note
    cut = (depth_of(actual), inner) == (MAX_RECORD_DEPTH - 3, CUT_NOTE)
    whole = (depth_of(actual), inner) == (levels, 1)
    assert whole if levels < 500 else cut if levels > 2000 else cut or whole


def test_a_deep_malformed_line_is_one_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps(verdict("t1")) + "\n" + "[" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(MetricsError) as caught:
        read_verdicts(path)
    assert str(caught.value) == (
        f"{path}:2: invalid JSON nested deeper than {MAX_RECORD_DEPTH} levels"
    )


def test_a_deep_verdict_field_is_refused_by_its_key(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    line = json.dumps(verdict("t1", success="@")).replace('"@"', deep(5000))
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(MetricsError, match=rf"^{path}:1: \$\.success: expected true or false"):
        read_verdicts(path)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_bytes(json.dumps(verdict("t1")).encode() + b'\n{"task_id": "\xff"}\n')
    with pytest.raises(MetricsError, match=rf"^{path}:2: not UTF-8: invalid byte 0xff"):
        read_verdicts(path)


def test_cut_deep_keeps_a_shallow_value_as_it_is() -> None:
    shallow = {"a": [1, {"b": 2}]}
    assert cut_deep(shallow) is shallow
    cut = cut_deep({"a": json.loads(deep(300))}, limit=10)
    assert depth_of(cut["a"]) == 9 and json.dumps(cut)
    with pytest.raises(JsonLineError):
        list(jsonl_values(b"{}\n{\n"))


def _run_folder(root: Path) -> Path:
    """A run folder: rollouts.jsonl (strict and parity) and upstream/ (parity only)."""
    root.mkdir()
    (root / "rollouts.jsonl").write_text(json.dumps(verdict("t1")) + "\n", encoding="utf-8")
    upstream = root / "upstream" / "run_1"
    upstream.mkdir(parents=True)
    (upstream / "results_oracle__csm__t1.json").write_text(
        json.dumps(
            {
                "runs": [{"run_number": 1, "overall_success": False}],
                "statistics": {"overall_success_rate": 0.0, "verifier_level_pass_rate": 0.5},
            }
        ),
        encoding="utf-8",
    )
    return root


def test_a_run_folder_is_its_rollouts_file_and_its_upstream_folder_stays_upstream(
    tmp_path: Path,
) -> None:
    run = _run_folder(tmp_path / "run")
    where = locate_run(run)
    assert (where.kind, where.path) == ("rollouts", run / "rollouts.jsonl")
    assert read_run(run) == read_run(run / "rollouts.jsonl") == read_verdicts(where.path)
    assert locate_run(run / "upstream").kind == "upstream"
    assert [type(item).__name__ for item in read_run(run / "upstream")] == ["UpstreamResultFile"]


def test_a_path_that_is_no_run_is_refused_in_one_wording(tmp_path: Path) -> None:
    with pytest.raises(MetricsError) as missing:
        locate_run(tmp_path / "typo")
    assert str(missing.value) == f"{tmp_path / 'typo'}: no such file or folder"
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(MetricsError, match=r": not a run: expected a run folder"):
        read_run(tmp_path / "notes.txt")
