"""Comparing an actual value with a verifier's expected value.

``upstream_compare`` is upstream's comparison to the letter (Python operators,
its details strings, its error texts). ``strict_compare`` corrects it: numbers
equal their numeric strings and full ISO-8601 timestamps compare as instants.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, NamedTuple

from dateutil.parser import isoparse

__all__ = ["COMPARISON_TYPES", "Comparison", "strict_compare", "upstream_compare"]

COMPARISON_TYPES = frozenset({"equals", "greater_than", "less_than", "contains"})


class Comparison(NamedTuple):
    """The verdict of one comparison: ``passed`` and upstream's ``details`` text.

    A named tuple rather than an attrs record: it is built once per comparison
    on the hot path of golden and bulk scoring, where tuple construction is
    several times cheaper than a frozen attrs instance.
    """

    passed: bool
    details: str
    known_type: bool = True


def upstream_compare(actual: Any, expected: Any, comparison_type: Any) -> Comparison:
    """Upstream's ``_compare_values``: ``==``, ``>``, ``<``, ``expected in str(actual)``."""
    try:
        if comparison_type == "equals":
            passed = actual == expected
        elif comparison_type == "greater_than":
            passed = actual > expected
        elif comparison_type == "less_than":
            passed = actual < expected
        elif comparison_type == "contains":
            passed = expected in str(actual)
        else:
            return Comparison(passed=False, details=f"Unknown comparison type: {comparison_type}",
                              known_type=False)
        return Comparison(passed=bool(passed),
                          details=f"Comparison {comparison_type}: {actual} vs {expected}")
    except Exception as exc:  # upstream reports any comparison failure as text
        return Comparison(passed=False, details=f"Comparison error: {exc}")


_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(text: str) -> int | float | None:
    match = _NUMBER.fullmatch(text)
    if not match:
        return None
    if match.group(2) is None and match.group(3) is None and "." not in text:
        return int(text)  # an integer literal stays exact, however large
    number = float(text)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _as_instant(text: str) -> datetime | None:
    if not _TIMESTAMP.match(text):
        return None
    try:
        moment = isoparse(text.strip())
    except (ValueError, OverflowError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _coerce(actual: Any, expected: Any) -> tuple[Any, Any]:
    """Bring numeric strings to numbers and timestamp strings to instants, pairwise."""
    if _is_number(actual) and isinstance(expected, str):
        number = _as_number(expected)
        return (actual, number) if number is not None else (actual, expected)
    if isinstance(actual, str) and _is_number(expected):
        number = _as_number(actual)
        return (number, expected) if number is not None else (actual, expected)
    if isinstance(actual, str) and isinstance(expected, str) and actual != expected:
        left, right = _as_instant(actual), _as_instant(expected)
        if left is not None and right is not None:
            return left, right
    return actual, expected


def strict_compare(actual: Any, expected: Any, comparison_type: Any) -> Comparison:
    """Upstream's comparison with numeric strings and ISO-8601 instants understood.

    An unknown comparison type fails with ``known_type=False`` so the engine can
    report a configuration error; ``contains`` looks for ``str(expected)``.
    """
    if comparison_type not in COMPARISON_TYPES:
        return Comparison(passed=False, details=f"Unknown comparison type: {comparison_type}",
                          known_type=False)
    details = f"Comparison {comparison_type}: {actual} vs {expected}"
    if comparison_type == "contains":
        needle = expected if isinstance(expected, str) else str(expected)
        return Comparison(passed=needle in str(actual), details=details)
    left, right = _coerce(actual, expected)
    try:
        if comparison_type == "equals":
            passed = left == right
        elif comparison_type == "greater_than":
            passed = left > right
        else:
            passed = left < right
    except TypeError as exc:
        return Comparison(passed=False, details=f"Comparison error: {exc}")
    return Comparison(passed=bool(passed), details=details)
