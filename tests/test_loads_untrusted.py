"""``loads_untrusted``: its scanner shortcut and its skipped depth walk read every text as
``json.loads`` and the checks after it do (the same value, or the same refusal)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._json import MAX_DEPTH, JsonInputError, loads_untrusted, nesting_depth

pytestmark = pytest.mark.property

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
_SPACE = st.text(alphabet=" \t\n\r\x0b\u00a0", max_size=3)


def _reference(data: str | bytes, max_depth: int) -> Any:
    """What loads_untrusted accepts, read the long way: json.loads, then the walks."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    text.encode("utf-8")
    value = json.loads(text)
    if nesting_depth(value, limit=max_depth) > max_depth:
        raise JsonInputError("too deep")
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend(item)
    return value


def _outcome(read: Any, data: str | bytes, max_depth: int) -> tuple[str, str]:
    try:
        return "value", repr(read(data, max_depth))
    except (ValueError, RecursionError):  # JsonInputError and UnicodeError are ValueErrors
        return "refused", ""


def _same(data: str | bytes, max_depth: int = MAX_DEPTH) -> None:
    expected = _outcome(_reference, data, max_depth)
    actual = _outcome(lambda d, m: loads_untrusted(d, max_depth=m), data, max_depth)
    assert expected == actual


@given(_JSON, _SPACE, _SPACE, st.booleans(), st.integers(min_value=0, max_value=4))
def test_a_json_text_reads_as_json_loads_reads_it(
    value: Any, before: str, after: str, ascii_only: bool, max_depth: int
) -> None:
    text = before + json.dumps(value, ensure_ascii=ascii_only) + after
    _same(text, max_depth)
    _same(text.encode("utf-8", "surrogatepass"), max_depth)


@given(st.binary(max_size=24))
def test_any_bytes_read_as_json_loads_reads_them(raw: bytes) -> None:
    _same(raw)


@pytest.mark.parametrize(
    ("text", "max_depth"),
    [
        ('{"a": 1}', 1),
        ('{"a": {"b": 1}}', 1),
        ('{"a": "{{{{"}', 1),
        ("[[[]]]", 2),
        ("[[[]]]", 3),
        ('{"a": 1}x', MAX_DEPTH),
        ('{"a": 1} \r\n\t', MAX_DEPTH),
        ('{"a": 1}\x0b', MAX_DEPTH),
        ('{"a": "\\ud800"}', MAX_DEPTH),
        ('{"a": NaN}', MAX_DEPTH),
        ("[" + "9" * 5000 + "]", MAX_DEPTH),
        ("[" * 100_000, MAX_DEPTH),
        ("[" * 150 + "]" * 150, MAX_DEPTH),
    ],
)
def test_edges(text: str, max_depth: int) -> None:
    _same(text, max_depth)
    _same(text.encode(), max_depth)


def test_refusals_keep_their_words() -> None:
    with pytest.raises(JsonInputError, match="nested deeper than 1 levels"):
        loads_untrusted('{"a": [1]}', max_depth=1)
    with pytest.raises(JsonInputError, match="unpaired surrogate escape"):
        loads_untrusted(b'{"a": "\\udc00"}')
    with pytest.raises(JsonInputError, match="invalid JSON at line 1 column 9"):
        loads_untrusted(b'{"a": 1}x')
