"""Comparing an actual value with a verifier's expected value.

``upstream_compare`` is upstream's comparison to the letter (Python operators,
its details strings, its error texts). ``strict_compare`` corrects it: numbers
equal their numeric strings (exactly: decimal and exponent strings as
``Decimal``, also past Python's 4,300-digit int limit; ASCII digits only) and
full ISO-8601 timestamps compare as instants.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from datetime import UTC, datetime
from decimal import Decimal
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
            return Comparison(
                passed=False,
                details=f"Unknown comparison type: {comparison_type}",
                known_type=False,
            )
        return Comparison(
            passed=bool(passed), details=f"Comparison {comparison_type}: {actual} vs {expected}"
        )
    except Exception as exc:  # upstream reports any comparison failure as text
        return Comparison(passed=False, details=f"Comparison error: {exc}")


#: ASCII digits only: ``"１２"`` (fullwidth) or ``"١٢"`` (Arabic-Indic) is text, not 12.
_NUMBER = re.compile(r"\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*", re.ASCII)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
#: The everyday shape, which ``datetime.fromisoformat`` reads as ``isoparse`` does, many
#: times faster (hour 24, leap seconds and other shapes go to ``isoparse``).
_PLAIN_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?"
)


def _is_number(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return kind is not str and isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(text: str) -> int | Decimal | None:
    """A numeric string as an exact number: an ``int``, or a ``Decimal`` for decimal and exponent forms."""
    match = _NUMBER.fullmatch(text)
    if not match:
        return None
    if match.group(2) is None and match.group(3) is None and "." not in text:
        # An integer literal stays exact, however large: past Python's int/str
        # digit limit it becomes a Decimal, which compares exactly with ints and floats.
        limit = sys.get_int_max_str_digits()
        return Decimal(text.strip()) if limit and len(match.group(1)) > limit else int(text)
    return Decimal(text.strip())  # exact: "3.0000000000000001" != 3, "1e400" == 10**400


def _against(other: Any, number: int | Decimal) -> int | float | Decimal:
    """The string's number as compared with ``other``: exact, unless ``other`` is a float.

    A float is already a rounded value, so a decimal string meets it as the
    nearest float (``0.1 == "0.1"``), except where that float would overflow to
    infinity or underflow to zero, and the exact value decides.
    """
    if type(number) is Decimal and isinstance(other, float):
        nearest = float(number)
        if math.isfinite(nearest) and (nearest != 0 or not number):
            return nearest
    return number


def _text(value: Any) -> str:
    """``str(value)``, also for integers past the digit limit and structures too deep to print."""
    if type(value) is str:
        return value
    try:
        return str(value)
    except ValueError:
        if isinstance(value, int):
            return str(Decimal(value))
        return f"<{type(value).__name__} holding an integer too long to print>"
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to print>"


def _as_instant(text: str) -> datetime | None:
    if not _TIMESTAMP.match(text):
        return None
    text, moment = text.strip(), None
    if _PLAIN_TIMESTAMP.fullmatch(text):
        with contextlib.suppress(
            ValueError
        ):  # a day that does not exist (2025-02-30): isoparse decides
            moment = datetime.fromisoformat(text)
    if moment is None:
        try:
            moment = isoparse(text)
        except (ValueError, OverflowError):
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _coerce(actual: Any, expected: Any) -> tuple[Any, Any]:
    """Bring numeric strings to numbers and timestamp strings to instants, pairwise."""
    if _is_number(actual) and isinstance(expected, str):
        number = _as_number(expected)
        return (actual, _against(actual, number)) if number is not None else (actual, expected)
    if isinstance(actual, str) and _is_number(expected):
        number = _as_number(actual)
        return (_against(expected, number), expected) if number is not None else (actual, expected)
    if isinstance(actual, str) and isinstance(expected, str) and actual != expected:
        left = _as_instant(actual)
        right = _as_instant(expected) if left is not None else None
        if left is not None and right is not None:
            return left, right
    return actual, expected


def strict_compare(actual: Any, expected: Any, comparison_type: Any) -> Comparison:
    """Upstream's comparison with numeric strings and ISO-8601 instants understood.

    An unknown comparison type fails with ``known_type=False`` so the engine can
    report a configuration error; ``contains`` looks for ``str(expected)``.
    """
    if comparison_type not in COMPARISON_TYPES:
        return Comparison(
            passed=False, details=f"Unknown comparison type: {comparison_type}", known_type=False
        )
    details = f"Comparison {comparison_type}: {_text(actual)} vs {_text(expected)}"
    if comparison_type == "contains":
        needle = expected if isinstance(expected, str) else _text(expected)
        return Comparison(needle in _text(actual), details)
    left, right = (
        (actual, expected)
        if type(actual) is type(expected) is not str
        else _coerce(actual, expected)
    )
    try:
        if comparison_type == "equals":
            passed = left == right
        elif comparison_type == "greater_than":
            passed = left > right
        else:
            passed = left < right
        passed = bool(passed)
    except (TypeError, ArithmeticError, RecursionError) as exc:  # unordered types, NaN vs Decimal
        return Comparison(passed=False, details=f"Comparison error: {_text(exc)}")
    return Comparison(passed, details)
