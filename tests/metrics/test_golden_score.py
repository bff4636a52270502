"""Upstream's compute_score.py on result folders: our printout must be its stdout, byte for byte.

``tests/golden/score_parity.json`` was made by tests/golden/generators/gen_score_parity.py
(upstream's ``compute_score.main`` on each folder). Each case's folder is rebuilt
here and read with ``read_upstream_results``/``upstream_groups``; where upstream
printed its table, ``upstream_table`` must equal its stdout (with the colour
codes; without them when ``color=False``); where upstream failed, we must name
the file instead (``unreadable``, or a ``MetricsError`` for a rate too large to
average). ``EOG_SCORE_PARITY_GOLDEN_FILE`` names another file of the same format.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from eog_core.metrics import (
    MetricsError,
    read_upstream_results,
    upstream_groups,
    upstream_summary,
    upstream_table,
)

GOLDEN = Path(
    os.environ.get("EOG_SCORE_PARITY_GOLDEN_FILE")
    or Path(__file__).parent.parent / "golden" / "score_parity.json"
)
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def build(case: dict[str, Any], root: Path) -> None:
    for folder in case["dirs"]:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, content in case["files"]:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (
            base64.b64decode(content["base64"])
            if isinstance(content, dict)
            else content.encode("utf-8")
        )
        path.write_bytes(data)


def test_golden_file_is_complete() -> None:
    if "EOG_SCORE_PARITY_GOLDEN_FILE" in os.environ:
        return
    assert len(CASES) >= 500
    names = [name for case in CASES for name, _ in case["files"]]
    assert any("/results_task_" in name for name in names)
    assert any(name.count("/") > 1 for name in names)  # nested folders
    assert any(case["upstream"]["error"] for case in CASES)  # malformed files
    assert any(case["dirs"] for case in CASES)  # empty row folders
    assert any("OverflowError" in (case["upstream"]["error"] or "") for case in CASES)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_printout_is_compute_scores_stdout(index: int, tmp_path: Path) -> None:
    case = CASES[index]
    root = tmp_path / "results"
    root.mkdir()
    build(case, root)
    files = read_upstream_results(root)
    upstream = case["upstream"]
    if upstream["error"] is None:
        summary = upstream_summary(files, upstream_groups(root))
        assert summary.unreadable == ()
        assert upstream_table(summary, color=True) == upstream["stdout"]
        assert upstream_table(summary) == ANSI.sub("", upstream["stdout"])
        return
    assert upstream["stdout"] == ""
    failure: MetricsError | None = None
    try:
        summary = upstream_summary(files, upstream_groups(root))
    except (
        MetricsError
    ) as exc:  # a rate too large to average (upstream may have failed on another file first)
        failure = exc
    if failure is not None:
        assert "too large to average" in str(failure)
        assert failure.source is not None and Path(failure.source).is_file()
        return
    assert summary.unreadable, upstream["error"]
    assert all(Path(path).is_file() or Path(path).is_symlink() for path, _ in summary.unreadable)
