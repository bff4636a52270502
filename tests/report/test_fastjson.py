"""The report's JSON helpers: the fast path and the standard library agree, also where orjson refuses."""

from __future__ import annotations

import json
import math

import pytest

from eog_core.report._fastjson import dumps_for_script, exact_loads, loads, may_hold_big_integer


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, "x"], "b": null}',
        '{"lone": "\\ud800"}',  # a lone surrogate: orjson refuses it, json reads it
        '{"n": NaN}',
    ],
)
def test_loads_reads_what_json_reads(text: str) -> None:
    expected, found = json.loads(text), loads(text)
    if "NaN" in text:
        assert math.isnan(found["n"])
    else:
        assert found == expected


def test_loads_raises_the_standard_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads('{"a": ')


@pytest.mark.parametrize(
    "data",
    [
        {"text": "</script><script>alert(1)</script>", "n": [1, 2.5]},
        {"lone": "\ud800 </script>"},  # orjson refuses to write it: the standard library does
        {1: "non-string key"},
    ],
)
def test_dumps_for_script_never_writes_a_less_than_sign(data: object) -> None:
    text = dumps_for_script(data)
    assert "<" not in text
    assert json.loads(text) == json.loads(json.dumps(data))


def test_a_big_integer_is_caught_and_read_exactly() -> None:
    text = '{"big": 123456789012345678901234567890}'
    fast = loads(text)["big"]
    if may_hold_big_integer(fast):  # orjson installed: a float, caught
        assert exact_loads(text)["big"] == 123456789012345678901234567890
    else:
        assert fast == 123456789012345678901234567890
    assert not may_hold_big_integer(2.5) and not may_hold_big_integer(2**70)
