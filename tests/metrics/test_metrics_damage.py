"""damage_summary (#32): rates from rollout records' ``damage`` field, parsed as score reads them."""

from __future__ import annotations

from typing import Any

import pytest

from eog_core.metrics import MetricsError, damage_summary, parse_verdict, runs_from_verdicts


def _record(repeat: int, success: bool, damage: Any = None, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task_id": "t",
        "domain": fields.pop("domain", "csm"),
        "mode": "oracle",
        "repeat": repeat,
        "policy": "strict",
        "success": success,
        "pass_rate": 1.0 if success else 0.0,
        "evaluation_completed": fields.pop("completed", True),
        "parity": {"success": success, "pass_rate": 1.0 if success else 0.0},
    }
    if damage is not None:
        record["damage"] = damage
    return record


def _damage(outcome: str, dollars: float | None = None, severity: str | None = None) -> Any:
    return {"outcome": outcome, "severity": severity, "dollars": dollars, "deltas": []}


def _runs(*records: dict[str, Any]) -> Any:
    return runs_from_verdicts(
        parse_verdict(r, source="rollouts.jsonl", line=n) for n, r in enumerate(records, 1)
    )


def test_records_without_damage_have_no_summary() -> None:
    assert damage_summary(_runs(_record(0, True), _record(1, False))) is None


def test_rates_count_a_success_that_damages_as_damage_and_price_the_damage() -> None:
    summary = damage_summary(
        _runs(
            _record(0, True, _damage("PASS")),
            _record(1, True, _damage("FAIL_DAMAGE", 10.0, "HIGH")),  # succeeds while damaging
            _record(2, False, _damage("FAIL_DAMAGE", 2.5, "LOW")),  # fails and damages
            _record(3, False, _damage("FAIL_SAFE")),
            _record(4, True, _damage("unjudged")),
            _record(5, True),  # no capture
            _record(6, True, _damage("FAIL_DAMAGE"), domain="itsm"),  # unpriced damage
        )
    )
    assert summary is not None
    overall = summary.overall
    assert (overall.rollouts, overall.captured, overall.judged, overall.unjudged) == (7, 6, 5, 1)
    assert (overall.passed, overall.failed_safe, overall.damaged) == (1, 1, 3)
    assert overall.success_while_damaging == 2
    assert (overall.damage_rate, overall.dollars, overall.high) == (3 / 5, 12.5, 1)
    csm, itsm = summary.by_domain
    assert (csm.name, csm.damaged, csm.dollars, csm.damage_rate) == ("csm", 2, 12.5, 2 / 4)
    assert (itsm.name, itsm.damaged, itsm.dollars, itsm.success_while_damaging) == (
        "itsm",
        1,
        None,
        1,
    )


def test_an_incomplete_evaluation_that_damages_is_not_a_success_while_damaging() -> None:
    summary = damage_summary(_runs(_record(0, True, _damage("FAIL_DAMAGE"), completed=False)))
    assert summary is not None
    assert (summary.overall.damaged, summary.overall.success_while_damaging) == (1, 0)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ({"outcome": "BROKEN", "deltas": []}, "$.damage.outcome: expected one of PASS"),
        ({"outcome": "PASS", "dollars": "1"}, "$.damage.dollars: expected a number or null"),
        ({"outcome": "PASS", "deltas": {}}, "$.damage.deltas: expected a list"),
        (["PASS"], "$.damage: expected an object or null"),
    ],
)
def test_a_malformed_damage_field_names_its_path(damage: Any, message: str) -> None:
    with pytest.raises(MetricsError) as caught:
        _runs(_record(0, True, damage))
    assert message in str(caught.value)
    assert "rollouts.jsonl:1" in str(caught.value)
