"""Our damage verdict against agentrelbench 0.1.0's labeler, installed from PyPI (``nox -s
damage_labeler``): on generated before/after states and specs, and on the damage.json files of
its own suite, outcome, severity, dollars and the damage deltas agree for tables with a
single-column key (docs/state.md, "Collateral damage"). Its ``eog_success`` is our strict
verdict; its volatile columns are the ones our rule and domain list mask."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from agentrelbench import labeler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eog_core.state import (
    DamageSpec,
    damage_spec_from_mapping,
    damage_verdict,
    load_damage_specs,
    volatile_columns,
)

SUITE = Path(str(resources.files("agentrelbench"))) / "suite"
DATA = SUITE / "data" / "eog"
SPEC_FILES = sorted(SUITE.rglob("damage.json"))
EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: What the compared cases covered: outcomes, priced damage, partly allowed modified rows.
SEEN: Counter[str] = Counter()

Schema = dict[str, dict[str, Any]]  # table -> {"pk": column, "pools": {column: [values]}}


def document(state: dict[str, list[dict[str, Any]]], schema: Schema) -> dict[str, Any]:
    tables = {
        table: {
            "columns": list(schema[table]["pools"]),
            "primary_key": [schema[table]["pk"]],
            "rows": rows,
        }
        for table, rows in state.items()
    }
    return {"format": "eog-state/1", "gyms": {"g": {"database_id": "d", "tables": tables}}}


@st.composite
def states(draw: st.DrawFn, schema: Schema) -> tuple[dict[str, Any], dict[str, Any]]:
    """A before state and an after state that removes, modifies and adds some of its rows."""
    before: dict[str, list[dict[str, Any]]] = {}
    after: dict[str, list[dict[str, Any]]] = {}
    for table, shape in schema.items():
        pk, pools = shape["pk"], shape["pools"]

        def row(key: Any, pools: dict[str, list[Any]] = pools, pk: str = pk) -> dict[str, Any]:
            values = {c: draw(st.sampled_from(p)) for c, p in pools.items() if c != pk}
            return {pk: key, **values}

        keys = draw(st.lists(st.sampled_from(pools[pk]), unique=True, max_size=5))
        old = [row(k) for k in keys]
        new = []
        for r in old:
            fate = draw(st.sampled_from(["keep", "remove", "modify", "modify"]))
            if fate == "keep":
                new.append(r)
            elif fate == "modify":
                changed = draw(st.lists(st.sampled_from(sorted(r)), unique=True, min_size=1))
                fresh = row(r[pk])
                new.append({c: fresh[c] if c in changed and c != pk else v for c, v in r.items()})
        unused = [k for k in pools[pk] if k not in keys]
        for k in draw(st.lists(st.sampled_from(unused), unique=True)) if unused else []:
            new.append(row(k))
        before[table], after[table] = old, new
    return before, after


def compare(
    schema: Schema,
    raw_spec: dict[str, Any],
    before: dict[str, Any],
    after: dict[str, Any],
    success: bool,
    domain: str | None = None,
) -> None:
    ours = damage_verdict(
        document(before, schema),
        document(after, schema),
        spec=damage_spec_from_mapping({**raw_spec, "domain": domain}, task_id="t"),
        strict_success=success,
    )
    theirs = labeler.label_run(
        before,
        after,
        labeler.DamageSpec.from_task(
            raw_spec.get("allowed", []), raw_spec.get("pricing", []), raw_spec.get("params", {})
        ),
        {
            table: sorted(volatile_columns(table, shape["pools"], domain=domain))
            for table, shape in schema.items()
        },
        {table: shape["pk"] for table, shape in schema.items()},
        labeler.RunMeta(eog_success=success),
    )
    assert (ours["outcome"], ours["severity"], ours["dollars"]) == (
        theirs.outcome,
        theirs.damage.severity,
        theirs.damage.dollars,
    )
    damage = [
        (
            d["table"],
            d["op"],
            *d["key"].values(),
            d.get("damaged_columns", []),
            d["severity"],
            d["dollars"],
        )
        for d in ours["deltas"]
        if d["verdict"] == "damage"
    ]
    assert damage == [
        (d.table, d.op, d.key, d.changed_columns, d.severity, d.dollars)
        for d in theirs.damage.deltas
    ]
    SEEN[ours["outcome"]] += 1
    SEEN["priced"] += ours["dollars"] is not None
    SEEN["allowed"] += any(d["verdict"] == "allowed" for d in ours["deltas"])
    SEEN["partly allowed"] += any(
        d.get("damaged_columns", d["columns"]) != d["columns"] for d in ours["deltas"]
    )


# -- generated specs over a small generated schema -------------------------------------

SCHEMA: Schema = {
    "item": {
        "pk": "id",
        "pools": {
            "id": [1, 2, 3, 4, 5, 6],
            "status": ["open", "closed", None],
            "owner": [1, 2],
            "price": [10.0, 2.5, None, 7],
            "sys_updated_on": ["t0", "t1"],
        },
    },
    "case_sla": {
        "pk": "case_sla_id",
        "pools": {
            "case_sla_id": ["a", "b", "c", "d"],
            "stage": ["x", "y"],
            "start_time": ["t0", "t1"],  # volatile in csm only
            "cost": [1.5, 3.0],
        },
    },
}
TABLES = [*SCHEMA, "*"]
COLUMNS = sorted({c for shape in SCHEMA.values() for c in shape["pools"]})


@st.composite
def rules(draw: st.DrawFn, *, pricing: bool) -> dict[str, Any]:
    table = draw(st.sampled_from(TABLES))
    pools = SCHEMA[table]["pools"] if table != "*" else SCHEMA["item"]["pools"]
    rule: dict[str, Any] = {"table": table}
    if draw(st.booleans()):
        rule["op"] = draw(st.sampled_from(["added", "removed", "modified", "*"]))
    where_columns = draw(st.lists(st.sampled_from(sorted(pools)), unique=True, max_size=2))
    if where_columns:
        rule["where"] = {
            c: "$task.p" if c == "owner" else draw(st.sampled_from(pools[c])) for c in where_columns
        }
    if pricing:
        if draw(st.booleans()):
            rule["severity"] = draw(st.sampled_from(["LOW", "MEDIUM", "HIGH"]))
        if draw(st.booleans()):
            rule["dollars_from"] = draw(st.sampled_from(["price", "cost", "status", "nope"]))
    elif draw(st.booleans()):
        rule["columns"] = draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=3))
    return rule


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "params": {"p": draw(st.sampled_from([1, 2]))},
        "allowed": draw(st.lists(rules(pricing=False), max_size=4)),
        "pricing": draw(st.lists(rules(pricing=True), max_size=3)),
    }


def _numeric_dollars(spec: dict[str, Any]) -> bool:
    # agentrelbench raises on float("open"); ours prices text that is no number as None
    return all(r.get("dollars_from") != "status" for r in spec["pricing"])


@EXAMPLES
@given(
    spec=specs().filter(_numeric_dollars),
    pair=states(SCHEMA),
    success=st.booleans(),
    domain=st.sampled_from([None, "csm"]),
)
def test_generated_states_and_specs(
    spec: dict[str, Any], pair: tuple[Any, Any], success: bool, domain: str | None
) -> None:
    compare(SCHEMA, spec, *pair, success, domain)


# -- agentrelbench's own suite ---------------------------------------------------------


def suite_schema(raw: dict[str, Any]) -> Schema:
    """Tables the spec names (plus an untouched one), keyed as agentrelbench's registry keys
    them, with pools holding every value its rules bind and others beside."""
    registry = json.loads((DATA / f"primary-keys-{raw['domain']}.json").read_text())
    keys = registry["primary_keys"]
    params = raw.get("params", {})
    named = {r["table"] for r in raw.get("allowed", []) + raw.get("pricing", [])} - {"*"}
    schema: Schema = {}
    for table in [*sorted(named), "location"]:
        pk = keys[table]
        pools: dict[str, list[Any]] = {pk: [101, 102, 103], "note": ["n1", "n2"]}
        pools.update({"sys_updated_on": ["t0", "t1"], "updated_at": ["t0", "t1"]})
        for rule in raw.get("allowed", []) + raw.get("pricing", []):
            if rule["table"] not in (table, "*"):
                continue
            for column, value in rule.get("where", {}).items():
                bound = params[value[6:]] if str(value).startswith("$task.") else value
                pools.setdefault(column, [])
                if bound not in pools[column]:
                    pools[column].append(bound)
            for column in rule.get("columns", []):
                pools.setdefault(column, ["c1", "c2"])
            if "dollars_from" in rule:
                pools[rule["dollars_from"]] = [1200.0, 99.5, None]
        for column, pool in pools.items():
            if column not in (pk, "note") and all(isinstance(v, int) for v in pool if v):
                pool.extend(v for v in (7, 8) if v not in pool)
            elif all(isinstance(v, str) for v in pool if v) and "other" not in pool:
                pool.append("other")
        schema[table] = {"pk": pk, "pools": pools}
    return schema


def test_the_suite_has_its_damage_files() -> None:
    assert len(SPEC_FILES) >= 30
    for folder in {path.parent.parent for path in SPEC_FILES}:
        specs = load_damage_specs(folder)  # every file of the suite loads
        assert all(isinstance(s, DamageSpec) for s in specs.values())


@pytest.mark.parametrize(
    "path", SPEC_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_suite_spec(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    schema = suite_schema(raw)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pair=states(schema), success=st.booleans())
    def check(pair: tuple[Any, Any], success: bool) -> None:
        compare(schema, raw, *pair, success, raw["domain"])

    check()


def test_the_compared_cases_reached_every_verdict() -> None:
    """Runs last (the session runs the file in order): the cases above were not all alike."""
    for seen in ("PASS", "FAIL_SAFE", "FAIL_DAMAGE", "priced", "allowed", "partly allowed"):
        assert SEEN[seen] >= 10, SEEN
