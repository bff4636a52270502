"""STRICT compares numeric strings exactly, also past Python's 4,300-digit int limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eog_core import PARITY, STRICT, SqliteSqlRunner, compare_values, verify_task
from tests.verify.test_strict import check, task_with

HUGE = "9" * 5000
POWER = "1" + "0" * 5000


@pytest.mark.parametrize(("actual", "expected", "kind", "passed"), [
    (HUGE, 5, "equals", False),
    (5, HUGE, "equals", False),
    (HUGE, 5, "greater_than", True),
    (5, HUGE, "less_than", True),
    (HUGE, 5.5, "less_than", False),
    (10**5000, POWER, "equals", True),
    (POWER, 10**5000, "equals", True),
    (10**5000 + 1, POWER, "greater_than", True),
    (10**5000, POWER, "contains", True),
    (POWER, 10**5000, "contains", True),
    (HUGE, float("inf"), "less_than", True),
    (float("nan"), HUGE, "less_than", False),
    (HUGE, float("nan"), "equals", False),
    (" -" + HUGE + " ", -(10**5000 - 1), "equals", True),
], ids=lambda value: value if isinstance(value, str) and len(value) < 20 else type(value).__name__)
def test_huge_numbers_compare_exactly(actual: object, expected: object, kind: str, passed: bool) -> None:
    result = compare_values(actual, expected, kind, STRICT)
    assert result.passed is passed
    assert result.details


def test_huge_numbers_never_raise_under_parity() -> None:
    # Upstream reports its own failure as text; we only guarantee no exception escapes.
    assert compare_values(10**5000, 1, "equals", PARITY).details.startswith("Comparison error")
    assert compare_values(HUGE, 5, "equals", PARITY).passed is False


def test_details_show_big_integers_in_full() -> None:
    details = compare_values(10**5000, 1, "equals", STRICT).details
    assert details == f"Comparison equals: {POWER} vs 1"


async def test_verify_task_on_a_5000_digit_expectation(tmp_path: Path) -> None:
    path = tmp_path / "n.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (n INTEGER, s TEXT)")
        connection.execute("INSERT INTO t VALUES (7, ?)", (HUGE,))
    task = task_with(check("SELECT n FROM t", HUGE, name="int-vs-huge"),
                     check("SELECT s FROM t", HUGE, name="text-vs-huge"),
                     check("SELECT n FROM t", HUGE, name="less", comparison="less_than"))
    with SqliteSqlRunner({"gym-a": path}) as runner:
        for policy in (STRICT, PARITY):
            verdict = await verify_task(task, sql=runner, policy=policy)
            assert [r.passed for r in verdict.results] == [False, True, policy is STRICT]
            assert verdict.evaluation_completed
