"""``unsendable``: the shortcut for flat tool arguments answers as the full walk does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._json import unsendable

pytestmark = pytest.mark.property

_SCALARS = (
    st.text()
    | st.integers()
    | st.integers(min_value=2**60, max_value=10**5000)
    | st.floats()
    | st.booleans()
    | st.none()
)


@given(st.dictionaries(st.text() | st.integers(), _SCALARS, max_size=6))
def test_a_flat_mapping_is_judged_as_the_walk_judges_it(arguments: dict[Any, Any]) -> None:
    walked = unsendable([arguments])  # a list is never taken by the shortcut
    assert unsendable(arguments) == walked


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"name": "Harbor Lane", "n": 2**64 - 1, "x": 1.5, "b": True, "z": None}, None),
        ({"n": 10**5000}, "digits"),
        ({"a": "\udcff"}, "not UTF-8"),
        ({"\ud800": 1}, "not UTF-8"),
        ({1: "\ud800"}, "not UTF-8"),
        ({"a": {"b": "\ud800"}}, "not UTF-8"),
        ({"x": float("nan")}, "not a JSON number"),
        ({"x": float("inf")}, "not a JSON number"),
    ],
)
def test_flat_arguments(arguments: dict[Any, Any], why: str | None) -> None:
    answer = unsendable(arguments)
    assert answer is None if why is None else why in str(answer)


def test_the_depth_limit_still_holds_for_a_flat_mapping() -> None:
    assert unsendable({"a": 1}, max_depth=1) is None
    assert "nested deeper than 0" in str(unsendable({"a": 1}, max_depth=0))
