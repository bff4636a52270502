"""``eog_core._json``'s writers and their fallbacks: orjson writes the same bytes as the
standard library (or leaves the value to it), the C encoder built from a private name writes
what the public encoder writes, and ``loads_bytes`` without the decoder's private scanner
reads as ``json.loads`` does."""

from __future__ import annotations

import datetime
import enum
import json
import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._json import (
    _read,
    _write,
    dumps_compact,
    dumps_compact_bytes,
    dumps_default,
    loads_bytes,
)

pytestmark = pytest.mark.property


class Colour(enum.Enum):
    RED = "red"
    BLUE = 2


class Level(enum.IntEnum):
    HIGH = 3


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from([1e-5, 2.5e-7, 1e16, 1e-320, 5e-324, 1e300, -0.0, 1e15, 1e-4])
    | st.text()
    | st.text(alphabet='\u2028\u2029\u0085\ud800\udfff<>"\\\x00\x1f\x7fé😀a')
    | st.sampled_from([Colour.RED, Colour.BLUE, Level.HIGH, uuid.UUID(int=7)])
    | st.datetimes(timezones=st.none() | st.just(datetime.UTC))
)
_KEYS = st.text() | st.integers(min_value=-3, max_value=3) | st.sampled_from([True, None, 1.5])
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(_KEYS, children, max_size=4)
    ),
    max_leaves=16,
)


def _without_orjson(value: Any, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as patch:
        patch.setattr(_write, "_orjson", None)
        return dumps_compact_bytes(value)


class Name(str):
    def __str__(self) -> str:
        return "shown otherwise"


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


# each class of input orjson would write otherwise: the standard library writes it
_OTHERWISE = [
    [1e-5, 2.5e-7, 1e-9, 1e-10, 1e16, 5e-324, 1.5e-320],  # exponents, subnormals
    {"n": 2**64, "m": -(2**63) - 1},  # past 64 bits
    {"lone": "\ud800", "low": "a\udfffb"},
    {2: "a", None: "b", True: "c", 1.5: "d"},  # keys that are not str
    [Colour.RED, Colour.BLUE, Level.HIGH, uuid.UUID(int=7)],
    [datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), datetime.date(2026, 1, 2)],
    [Name("x"), {Name("k"): 1}],  # a str subclass, as a value and as a key
    _deep(253),  # the deepest orjson writes (254 levels)
    [_deep(252), {"a": "\ud800"}],  # as deep, with a value it does not write
    [float("nan"), float("inf"), -math.inf],
    "\u2028\u2029\u0085 line separators, control \x00\x1f\x7f and <script>",
]


@pytest.mark.parametrize("deep", [_deep(254), [_deep(253), {"a": "\ud800"}], _deep(5000)])
def test_past_orjson_s_nesting_limit_both_refuse(
    deep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("orjson")
    with pytest.raises(RecursionError):
        dumps_compact_bytes(deep)
    with pytest.raises(RecursionError):
        _without_orjson(deep, monkeypatch)


@given(_VALUES)
def test_orjson_and_the_standard_library_write_the_same_bytes(value: Any) -> None:
    pytest.importorskip("orjson")
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert dumps_compact_bytes(value) == _without_orjson(value, monkeypatch)


@pytest.mark.parametrize("value", _OTHERWISE)
def test_each_class_orjson_writes_otherwise_is_written_alike(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("orjson")
    raw = dumps_compact_bytes(value)
    assert raw == _without_orjson(value, monkeypatch)
    assert len(raw.decode("utf-8").splitlines()) == 1


@given(_VALUES)
def test_what_is_written_is_one_utf8_line_that_reads_back(value: Any) -> None:
    raw = dumps_compact_bytes(value)
    text = raw.decode("utf-8")  # never a lone surrogate
    assert len(text.splitlines()) == 1 and "\n" not in text
    json.loads(text)


def test_orjson_is_used_for_plain_values_and_nan_is_null_either_way() -> None:
    orjson = pytest.importorskip("orjson")
    plain = {"a": [1, 2.5, None, True, "é\u2028"], "b": {"c": -0.0, "d": 1e300}}
    assert dumps_compact_bytes(plain) == orjson.dumps(plain).replace("\u2028".encode(), b"\\u2028")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for value in [float("nan"), [float("-inf"), {"x": float("inf")}]]:
            expected = b"null" if isinstance(value, float) else b'[null,{"x":null}]'
            assert dumps_compact_bytes(value) == expected
            assert _without_orjson(value, monkeypatch) == expected


_FINITE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


def _public(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


@given(_FINITE)
def test_the_c_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    try:
        expected = _public(value)
    except ValueError:  # an infinity: refused by both
        with pytest.raises(ValueError):
            dumps_compact(value)
        return
    assert dumps_compact(value) == expected
    assert _write.compact_encoder(None)(value) == expected  # no c_make_encoder


def _other_arguments(*args: Any) -> Any:
    raise TypeError("takes other arguments")


def _writes_otherwise(*args: Any) -> Any:
    return lambda value, level: ["{}"]


@pytest.mark.parametrize("make", [None, _other_arguments, _writes_otherwise])
def test_an_unusable_c_encoder_falls_back_to_the_public_one(make: Any) -> None:
    encode = _write.compact_encoder(make)
    value = {"a": [1, 2.5, None, "é\n"]}
    assert encode(value) == _public(value)
    with pytest.raises(ValueError):
        encode({"x": math.nan})


@given(_FINITE | st.floats())
def test_the_default_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    assert dumps_default(value) == json.dumps(value)
    assert _write.default_encoder(None)(value) == json.dumps(value)  # no c_make_encoder


@pytest.mark.parametrize("make", [None, _other_arguments, _writes_otherwise])
def test_an_unusable_c_encoder_falls_back_to_json_dumps(make: Any) -> None:
    value = {"a": [1, 2.5, None, "é\n", math.nan], "\u2028": {"b": True}}
    assert _write.default_encoder(make)(value) == json.dumps(value)


@given(_FINITE)
def test_loads_bytes_without_the_private_scanner_reads_as_json_loads(value: Any) -> None:
    raw = json.dumps(value).encode()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_read, "_SCAN", None)
        assert repr(loads_bytes(raw)) == repr(json.loads(raw))
