"""The report reads a run as ``score`` does: the same lines (raw line separators inside a
string), deep values read and shown cut, the same refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core._jsonl import CUT_NOTE
from eog_core.metrics import MetricsError, read_verdicts
from eog_core.report import build_content, load_run, render_html
from eog_core.report._fastjson import dumps_for_script
from tests.report.page import transcripts

SEPARATORS = "a\u2028b\u2029c\u0085d"


def record(task_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "domain": "csm",
        "mode": "oracle",
        "repeat": 0,
        "policy": "strict",
        "success": True,
        "pass_rate": 1.0,
        "evaluation_completed": True,
        "status": "evaluated",
        "model": "m",
        "results": [{"name": "v", "expected": 1, "actual": 1, "passed": True}],
        "parity": {"success": True, "pass_rate": 1.0, "evaluation_completed": True},
        **extra,
    }


def _innermost(value: Any) -> tuple[int, Any]:
    levels = 0
    while isinstance(value, list):
        value, levels = value[0], levels + 1
    return levels, value


def test_raw_line_separators_are_read_as_score_reads_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    lines = [record("t1", final_answer=SEPARATORS), record("t2")]
    (run / "rollouts.jsonl").write_bytes(  # as orjson writes: the separators raw
        b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in lines)
    )
    source = load_run(run)
    assert [v.task_id for v in source.inputs] == [v.task_id for v in read_verdicts(source.path)]
    assert [r["task_id"] for r in source.records] == ["t1", "t2"]
    details = transcripts(render_html(build_content([source], title="t")))
    assert [d["final_answer"] for d in details] == [SEPARATORS, None]


@pytest.mark.parametrize("levels", [300, 5000])
def test_a_deep_value_is_read_and_shown_cut(tmp_path: Path, levels: int) -> None:
    run = tmp_path / "run"
    run.mkdir()
    deep = "[" * levels + "1" + "]" * levels
    line = json.dumps(record("t1", results=[{"name": "v", "actual": "@"}])).replace('"@"', deep)
    (run / "rollouts.jsonl").write_text(line + "\n" + json.dumps(record("t2")) + "\n")
    source = load_run(run)
    assert [v.success for v in source.inputs] == [True, True]
    html = render_html(build_content([source], title="t"))
    [first, second] = transcripts(html)
    levels_shown, inner = _innermost(first["verdicts"]["strict"][0]["actual"])
    assert inner == CUT_NOTE and 150 < levels_shown < 200
    assert second["verdicts"]["strict"][0]["actual"] == 1


def test_dumps_for_script_cuts_only_what_is_too_deep() -> None:
    value: Any = 1
    for _ in range(3000):
        value = [value]
    text = dumps_for_script({"deep": value, "shallow": [1, [2]]})
    shown = json.loads(text)
    assert shown["shallow"] == [1, [2]] and _innermost(shown["deep"])[1] == CUT_NOTE


def test_a_line_that_is_no_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_text(json.dumps(record("t1")) + "\n" + '{"task_id": \n')
    with pytest.raises(MetricsError) as caught:
        load_run(path)
    assert str(caught.value).startswith(f"{path}:2: invalid JSON at column ")
    with pytest.raises(MetricsError) as again:
        read_verdicts(path)
    assert str(again.value) == str(caught.value)


def test_a_path_that_is_no_run_is_refused_as_score_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(MetricsError) as caught:
        load_run(tmp_path / "typo")
    assert str(caught.value) == f"{tmp_path / 'typo'}: no such file or folder"
