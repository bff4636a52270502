"""Property: comparing any two values never raises, and STRICT's equality and order are symmetric."""

from __future__ import annotations

import operator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dateutil.parser import isoparse
from hypothesis import example, given
from hypothesis import strategies as st

from eog_core import PARITY, STRICT, compare_values
from eog_core.verify import COMPARISON_TYPES, Comparison

pytestmark = pytest.mark.property

numeric_text = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False).map(str),
    st.decimals(allow_nan=False).map(str),
    st.sampled_from([4299, 4300, 4301, 5000]).map(lambda digits: "9" * digits),
    st.sampled_from(["1e400", "-1e400", " 42 ", "+7", ".5", "5.", "0x10", "1_000", "nan", "inf"]),
)
timestamps = st.datetimes().map(lambda moment: moment.isoformat(sep=" ")) | st.sampled_from(
    [
        "2025-01-01T10:00:00Z",
        "2025-01-01 10:00:00",
        "2025-01-01T12:00:00+02:00",
        "2025-13-45 99:99",
        "9999-12-31T23:59:59.999999-23:59",
        "0001-01-01 00:00",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.sampled_from([4400, 5000]).map(lambda digits: 10**digits - 1),
    st.text(max_size=12),
    numeric_text,
    timestamps,
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
kinds = st.sampled_from(sorted(COMPARISON_TYPES)) | st.none() | st.text(max_size=6) | st.integers()


@given(values, values, kinds)
@example("9" * 5000, 5, "equals")
@example(10**5000, "1" + "0" * 5000, "contains")
@example(float("nan"), "9" * 5000, "less_than")
def test_comparison_never_raises(actual: Any, expected: Any, kind: Any) -> None:
    for policy in (STRICT, PARITY):
        result = compare_values(actual, expected, kind, policy)
        assert isinstance(result, Comparison) and isinstance(result.passed, bool)
        assert isinstance(result.details, str)


@given(values, values)
@example("9" * 5000, 9)
@example("2025-01-01T12:00:00+02:00", "2025-01-01 10:00:00")
@example(" 42 ", 42.0)
def test_strict_equality_is_symmetric(left: Any, right: Any) -> None:
    assert (
        compare_values(left, right, "equals").passed == compare_values(right, left, "equals").passed
    )


@given(values, values)
@example("9" * 5000, 10**5000)
@example("1e400", float("inf"))
def test_strict_greater_than_mirrors_less_than(left: Any, right: Any) -> None:
    assert (
        compare_values(left, right, "greater_than").passed
        == compare_values(right, left, "less_than").passed
    )


@given(st.integers(), st.integers())
def test_numeric_strings_compare_like_their_numbers(left: int, right: int) -> None:
    for kind, expected in (
        ("equals", left == right),
        ("greater_than", left > right),
        ("less_than", left < right),
    ):
        assert compare_values(str(left), right, kind).passed is expected
        assert compare_values(left, str(right), kind).passed is expected


def _isoparse_instant(text: str) -> datetime | None:
    """How STRICT read timestamps before its fast path: dateutil's isoparse, naive as UTC."""
    try:
        moment = isoparse(text.strip())
    except (ValueError, OverflowError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


ZONES = ["", "Z", "+00:00", "-00:00", "+05:30", "-23:59", "+23:59", "-08:00"]


def iso_text(draw: st.DrawFn, moment: datetime) -> str:
    """``moment`` (UTC) written as verifiers write timestamps, in some zone, or a near miss."""
    zone = draw(st.sampled_from(ZONES))
    if zone not in ("", "Z"):
        sign, hours, minutes = (-1 if zone[0] == "-" else 1), int(zone[1:3]), int(zone[4:])
        moment += sign * timedelta(hours=hours, minutes=minutes)
    text = moment.strftime("%Y-%m-%d") + draw(st.sampled_from("T ")) + moment.strftime("%H:%M")
    precision = draw(st.sampled_from(["minutes", "seconds", "fraction"]))
    if precision != "minutes":
        text += moment.strftime(":%S")
    if precision == "fraction":
        text += "." + f"{moment.microsecond:06d}"[: draw(st.integers(1, 6))]
    text += zone + draw(st.sampled_from(["", "", " "]))
    return draw(
        st.sampled_from(
            [
                text,
                text,
                text,
                text.replace(text[11:13], "24", 1),
                text[:17] + "60" + text[19:],
                text[:5] + "02-30" + text[10:],
            ]
        )
    )


@st.composite
def iso_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two timestamps for moments close together (often the same instant written differently)."""
    moment = draw(st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)))
    step = draw(
        st.sampled_from(
            [
                timedelta(0),
                timedelta(0),
                timedelta(microseconds=1),
                timedelta(seconds=1),
                timedelta(minutes=-1),
                timedelta(hours=1),
                timedelta(days=-1),
            ]
        )
    )
    return iso_text(draw, moment), iso_text(draw, moment + step)


@given(iso_pairs())
@example(("2025-01-01 24:00", "2025-01-02 00:00"))
@example(("2025-02-30 10:00", "2025-03-02 10:00"))
@example(("2025-01-01T12:00:00.5+02:00", "2025-01-01 10:00:00.500000"))
@example(("2025-01-01 10:00:00.1", "2025-01-01T10:00:00.2Z"))
@example(("2025-01-01 10:00:01", "2025-01-01T10:00Z"))
@example(("9999-12-31T23:59:59.999999-23:59", "0001-01-01 00:00+23:59"))
def test_timestamps_compare_as_isoparse_reads_them(pair: tuple[str, str]) -> None:
    left, right = pair
    instants = _isoparse_instant(left), _isoparse_instant(right)
    operands: tuple[Any, Any] = pair if left == right or None in instants else instants
    for kind, compare in (
        ("equals", operator.eq),
        ("greater_than", operator.gt),
        ("less_than", operator.lt),
    ):
        assert compare_values(left, right, kind).passed is compare(*operands), kind
