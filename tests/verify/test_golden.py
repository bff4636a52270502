"""Replay the upstream verifier engine's golden cases in parity mode: exact equality.

``EOG_GOLDEN_FILE`` names another file of the same format (held-out cases).
Exactness is checked on the JSON text, so key order and ``1`` vs ``1.0`` vs
``true`` all count.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core import PARITY, compare_values, extract_value
from eog_core.verify import score_database_state

GOLDEN = Path(
    os.environ.get("EOG_GOLDEN_FILE")
    or Path(__file__).parent.parent / "golden" / "verifier_parity.json"
)
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]


def replay(case: dict[str, Any]) -> tuple[Any, Any]:
    """(what parity produced, what upstream produced) for one golden case."""
    kind = case["kind"]
    if kind == "extract":
        return extract_value(case["input"], PARITY), case["actual"]
    if kind == "compare":
        result = compare_values(case["actual"], case["expected"], case["comparison_type"], PARITY)
        return {"passed": result.passed, "details": result.details}, case["result"]
    if kind == "verify":
        return score_database_state(case["validation_config"], case["sql_outcome"], PARITY), case[
            "result"
        ]
    raise AssertionError(f"unknown golden case kind {kind!r}")


def test_golden_file_is_complete() -> None:
    assert len(CASES) >= 3000 or "EOG_GOLDEN_FILE" in os.environ
    assert {c["kind"] for c in CASES} <= {"extract", "compare", "verify"}


@pytest.mark.parametrize("index", range(len(CASES)))
def test_parity_matches_upstream(index: int) -> None:
    actual, expected = replay(CASES[index])
    assert json.dumps(expected) == json.dumps(actual)
