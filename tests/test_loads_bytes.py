"""``loads_bytes``: a gym's answer read as ``json.loads`` reads it (the same value, or the
same error with the same message), its scanner shortcut included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._json import loads_bytes

pytestmark = pytest.mark.property

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
_SPACE = st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2028", max_size=3)


def _outcome(read: Any, raw: bytes) -> tuple[str, str]:
    """What reading ``raw`` gives, comparable: the value's repr (NaN != NaN, but its repr
    matches) or the error's type and message."""
    try:
        return "value", repr(read(raw))
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


def _same(raw: bytes) -> None:
    assert _outcome(loads_bytes, raw) == _outcome(json.loads, raw)


@given(_JSON, _SPACE, _SPACE, st.booleans())
def test_a_json_text_reads_as_json_loads_reads_it(
    value: Any, before: str, after: str, ascii_only: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    _same((before + text + after).encode("utf-8", "surrogatepass"))


@given(st.binary(max_size=24))
def test_any_bytes_read_as_json_loads_reads_them(raw: bytes) -> None:
    _same(raw)


@given(_JSON, st.binary(min_size=1, max_size=4))
def test_a_text_with_something_after_it(value: Any, tail: bytes) -> None:
    _same(json.dumps(value).encode() + tail)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1}',
        b"[1, 2]",
        b'{"a": 1}\n',
        b'{"a": 1} \r\n\t',
        b'{"a": 1}\x0b',
        b'{"a": 1}x',
        b'{"a": 1}{"b": 2}',
        b"[1, 2",
        b'{"a": NaN}',
        b"[Infinity, -Infinity]",
        b'{"a":',
        b'{\x00"\x00',
        b"[\x00\x00\x00",
        '{"é": "\ud800"}'.encode("utf-8", "surrogatepass"),
        b'{"a": "\xff"}',
        b"\xef\xbb\xbf{}",
        b" {}",
        b"{}",
        b"[]",
        b"[",
        b"{",
        b"{}}",
        json.dumps({"a": "x"}).encode("utf-16"),
        b"[" * 100_000,
    ],
)
def test_edges(raw: bytes) -> None:
    _same(raw)
