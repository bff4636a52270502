"""STRICT compares numeric strings exactly, also past Python's 4,300-digit int limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eog_core import PARITY, STRICT, SqliteSqlRunner, compare_values, verify_task
from tests.verify.test_strict import check, task_with

HUGE = "9" * 5000
POWER = "1" + "0" * 5000


@pytest.mark.parametrize(
    ("actual", "expected", "kind", "passed"),
    [
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
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 20 else type(value).__name__,
)
def test_huge_numbers_compare_exactly(
    actual: object, expected: object, kind: str, passed: bool
) -> None:
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
    task = task_with(
        check("SELECT n FROM t", HUGE, name="int-vs-huge"),
        check("SELECT s FROM t", HUGE, name="text-vs-huge"),
        check("SELECT n FROM t", HUGE, name="less", comparison="less_than"),
    )
    with SqliteSqlRunner({"gym-a": path}) as runner:
        for policy in (STRICT, PARITY):
            verdict = await verify_task(task, sql=runner, policy=policy)
            assert [r.passed for r in verdict.results] == [False, True, policy is STRICT]
            assert verdict.evaluation_completed


@pytest.mark.parametrize(
    ("actual", "expected", "kind", "passed"),
    [
        (3, "3.0000000000000001", "equals", False),
        ("3.0000000000000001", 3, "greater_than", True),
        (9007199254740993, "9007199254740993.0", "equals", True),
        (10**400, "1e400", "less_than", False),
        (10**400, "1e400", "equals", True),
        (10**400 + 1, "1E400", "greater_than", True),
        (2, "2.5e0", "less_than", True),
        (0.1, "0.1", "equals", True),  # a float meets the string's nearest float
        (0.0, "1e-400", "equals", False),  # ... unless that float underflows
        (0.0, "1e-400", "less_than", True),
        (1e308, "1e400", "less_than", True),
        (float("inf"), "1e400", "greater_than", True),
        ("-0.0", 0, "equals", True),
    ],
    ids=str,
)
def test_decimal_and_exponent_strings_compare_exactly(
    actual: object, expected: object, kind: str, passed: bool
) -> None:
    assert compare_values(actual, expected, kind, STRICT).passed is passed


@pytest.mark.parametrize("text", ["\uff11\uff12", "\u0661\u0662", "1\u00a0", "\u0967\u0968.0"])
def test_only_ascii_digits_make_a_number(text: str) -> None:
    """Fullwidth, Arabic-Indic or Devanagari digits (and non-ASCII spaces) stay text under STRICT."""
    assert not compare_values(12 if "\u00a0" not in text else 1, text, "equals", STRICT).passed
    assert compare_values(text, text, "equals", STRICT).passed
    assert not compare_values(text, 5, "greater_than", STRICT).passed
    assert "Comparison error" in compare_values(text, 5, "greater_than", STRICT).details


@pytest.mark.parametrize(
    ("actual", "expected", "passed"),
    [
        (
            [1, 2],
            ["1", "2"],
            False,
        ),  # no coercion inside lists and dicts (docs/parity.md, "Decided edges")
        ({"n": 1}, {"n": "1"}, False),
        ([1, 2], [1, 2], True),
        (True, 1, True),  # Python's ==, kept
        (True, "1", False),  # a boolean is not a number for string coercion
        (True, "true", False),
        (False, "0", False),
    ],
)
def test_decided_edges_of_strict_equality(actual: object, expected: object, passed: bool) -> None:
    assert compare_values(actual, expected, "equals", STRICT).passed is passed
