"""The row-level diff on hand-built eog-state/1 documents: keys, keyless tables, masking."""

from __future__ import annotations

from typing import Any

import pytest

from eog_core.errors import SchemaError
from eog_core.state import diff_states, volatile_columns


def doc(tables: dict[str, tuple[list[str], list[str], list[dict[str, Any]]]]) -> dict[str, Any]:
    return {
        "format": "eog-state/1",
        "gyms": {
            "g": {
                "database_id": "db",
                "tables": {
                    name: {"columns": columns, "primary_key": key, "rows": rows}
                    for name, (columns, key, rows) in tables.items()
                },
            }
        },
    }


def ops(before: dict[str, Any], after: dict[str, Any], **options: Any) -> list[tuple[Any, ...]]:
    return [
        (c.table, c.op, None if c.key is None else tuple(c.key.values()), c.columns)
        for c in diff_states(before, after, **options).changes
    ]


def test_rows_match_by_composite_key() -> None:
    columns, key = ["a", "b", "v"], ["a", "b"]
    before = doc({"t": (columns, key, [{"a": 1, "b": 1, "v": "x"}, {"a": 1, "b": 2, "v": "y"}])})
    after = doc({"t": (columns, key, [{"a": 1, "b": 1, "v": "z"}, {"a": 2, "b": 1, "v": "y"}])})
    assert ops(before, after) == [
        ("t", "added", (2, 1), ()),
        ("t", "modified", (1, 1), ("v",)),
        ("t", "removed", (1, 2), ()),
    ]


def test_a_keyless_table_is_a_multiset_of_rows() -> None:
    row = {"tag": "a", "updated_at": "t0"}
    before = doc({"t": (["tag", "updated_at"], [], [row, row, {"tag": "b", "updated_at": "t0"}])})
    after = doc(
        {"t": (["tag", "updated_at"], [], [{"tag": "b", "updated_at": "t9"}, row, {"tag": "c"}])}
    )
    # one copy of "a" gone, "c" new; "b" only had its (volatile) stamp change: same row
    assert ops(before, after) == [("t", "added", None, ()), ("t", "removed", None, ())]


def test_volatile_columns_by_rule_and_by_domain_list() -> None:
    columns = ["sys_updated_on", "sys_mod_count", "created_at", "start_time", "status", "format"]
    assert volatile_columns("case_sla", columns, domain="csm") == {
        "sys_updated_on",
        "sys_mod_count",
        "created_at",
        "start_time",
    }
    assert "start_time" not in volatile_columns("case_sla", columns, domain="itsm")
    assert volatile_columns("t", ["status"], extra={"t": ["status"]}) == {"status"}


def test_a_change_of_json_type_is_a_change() -> None:
    before = doc({"t": (["id", "v"], ["id"], [{"id": 1, "v": 1}])})
    after = doc({"t": (["id", "v"], ["id"], [{"id": 1, "v": 1.0}])})
    assert ops(before, after) == [("t", "modified", (1,), ("v",))]


def test_a_table_on_one_side_only_adds_or_removes_all_its_rows() -> None:
    before = doc({})
    after = doc({"t": (["id"], ["id"], [{"id": 1}, {"id": 2}])})
    assert ops(before, after) == [("t", "added", (1,), ()), ("t", "added", (2,), ())]
    assert ops(after, before) == [("t", "removed", (1,), ()), ("t", "removed", (2,), ())]


def test_equal_states_have_an_empty_diff() -> None:
    state = doc({"t": (["id", "v"], ["id"], [{"id": 1, "v": {"$base64": "AA=="}}])})
    assert not diff_states(state, state)


def test_a_document_of_another_format_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"\$\.format: the before state is not an eog-state/1"):
        diff_states({"tables": {}}, doc({}))
