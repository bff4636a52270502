"""Loading damage specs (``--damage-specs DIR``) and the verdict's pricing rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.errors import SchemaError
from eog_core.state import damage_spec_from_mapping, damage_verdict, load_damage_specs


def write(root: Path, task_id: str, body: Any) -> Path:
    folder = root / task_id
    folder.mkdir(parents=True)
    path = folder / "damage.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    return path


def test_specs_are_read_per_task_folder_with_params_bound(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t1",
        {
            "task_id": "csm/t1",  # a note: the folder names the task
            "predicted_lever": {"lever": "x"},
            "params": {"ent": 11},
            "allowed": [{"table": "e", "op": "modified", "where": {"id": "$task.ent"}}],
        },
    )
    (tmp_path / "no-spec-here").mkdir()
    specs = load_damage_specs(tmp_path)
    assert list(specs) == ["t1"]
    (rule,) = specs["t1"].allowed
    assert rule.where == {"id": 11}
    assert rule.columns is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{", "$: cannot read damage spec: Expecting property name"),
        ({"allowed": [{"table": "e", "colums": ["a"]}]}, "$.allowed[0].colums: unknown key"),
        ({"allowed": [{"table": "e", "where": {"id": "$task.x"}}]}, "$.allowed[0].where.id"),
        ({"pricing": [{"table": "e", "op": "changed"}]}, "$.pricing[0].op: op must be one of"),
        ({"pricing": [{"table": "e", "severity": "SEVERE"}]}, "$.pricing[0].severity"),
        ({"allowed": [{"op": "added"}]}, "$.allowed[0].table: table must be a string"),
        ([], "$: a damage spec must be a JSON object"),
    ],
)
def test_a_malformed_spec_names_its_file_and_path(tmp_path: Path, body: Any, message: str) -> None:
    path = write(tmp_path, "t", body)
    with pytest.raises(SchemaError) as caught:
        load_damage_specs(tmp_path)
    assert str(caught.value).startswith(message)
    assert str(caught.value).endswith(f"in {path}")


def test_a_missing_folder_is_a_schema_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="damage specs folder not found"):
        load_damage_specs(tmp_path / "absent")


def state(rows: list[dict[str, Any]]) -> dict[str, Any]:
    table = {"columns": ["id", "price", "kind"], "primary_key": ["id"], "rows": rows}
    return {"format": "eog-state/1", "gyms": {"g": {"database_id": "d", "tables": {"p": table}}}}


def test_pricing_reads_dollars_before_the_change_and_sums_them() -> None:
    spec = damage_spec_from_mapping(
        {
            "pricing": [
                {"table": "p", "op": "removed", "where": {"kind": "gold"}, "severity": "HIGH"},
                {"table": "p", "op": "*", "dollars_from": "price"},
            ]
        },
        task_id="t",
    )
    before = state(
        [
            {"id": 1, "price": 10.5, "kind": "gold"},
            {"id": 2, "price": "4", "kind": "tin"},
            {"id": 3, "price": None, "kind": "tin"},
        ]
    )
    after = state([{"id": 2, "price": 99, "kind": "tin"}])
    verdict = damage_verdict(before, after, spec=spec, strict_success=True)
    assert verdict["outcome"] == "FAIL_DAMAGE"
    assert [(d["key"], d["severity"], d["dollars"]) for d in verdict["deltas"]] == [
        ({"id": 2}, "MEDIUM", 4.0),  # the price before the change
        ({"id": 1}, "HIGH", 10.5),
        ({"id": 3}, "MEDIUM", None),
    ]
    assert (verdict["severity"], verdict["dollars"]) == ("HIGH", 14.5)


def test_allowed_columns_leave_the_rest_of_a_modified_row_as_damage() -> None:
    spec = damage_spec_from_mapping(
        {"allowed": [{"table": "p", "op": "modified", "where": {"id": 1}, "columns": ["price"]}]},
        task_id="t",
    )
    before = state([{"id": 1, "price": 1, "kind": "a"}])
    after = state([{"id": 1, "price": 2, "kind": "b"}])
    (delta,) = damage_verdict(before, after, spec=spec, strict_success=True)["deltas"]
    assert (delta["columns"], delta["damaged_columns"]) == (["kind", "price"], ["kind"])
    price_only = state([{"id": 1, "price": 2, "kind": "a"}])
    verdict = damage_verdict(before, price_only, spec=spec, strict_success=False)
    assert verdict["outcome"] == "FAIL_SAFE"


def test_a_price_that_is_no_finite_number_is_unpriced_and_the_record_stays_json() -> None:
    spec = damage_spec_from_mapping(
        {"pricing": [{"table": "p", "dollars_from": "price"}]}, task_id="t"
    )
    before = state(
        [
            {"id": 1, "price": {"$float": "inf"}, "kind": "a"},
            {"id": 2, "price": "a lot", "kind": "a"},
            {"id": 3, "price": {"$base64": "AA=="}, "kind": "a"},
        ]
    )
    verdict = damage_verdict(before, state([]), spec=spec, strict_success=True)
    assert [d["dollars"] for d in verdict["deltas"]] == [None, None, None]
    assert (verdict["outcome"], verdict["severity"], verdict["dollars"]) == (
        "FAIL_DAMAGE",
        "MEDIUM",
        None,
    )
    json.dumps(verdict, allow_nan=False)  # no inf or nan anywhere in the record
