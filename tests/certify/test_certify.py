"""``certify_tasks`` on the local gym: the demo task certifies, and each defect planted in a
variant of it is found by the check meant to find it (nothing left on the gym)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eog_core.certify import (
    Certificate,
    CertifyOptions,
    certify_tasks,
    index_scripts,
    load_sources,
    load_task_scripts,
)
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths

REPO = Path(__file__).resolve().parents[2]
DEMO_SCRIPTS = REPO / "examples" / "certify-scripts"
TASK_ID = "demo_csm_fleet_renewal"


def demo_task() -> dict[str, Any]:
    task: dict[str, Any] = json.loads(demo_paths().task.read_text())
    task["gym_servers_config"][0]["seed_database_file"] = str(demo_paths().seed_sql)
    return task


def verifier(name: str, query: str, expected: object) -> dict[str, Any]:
    return {
        "verifier_type": "database_state",
        "name": name,
        "gym_name": "demo-csm-server",
        "validation_config": {
            "query": query,
            "expected_value": expected,
            "comparison_type": "equals",
        },
    }


def scripts_folder(
    tmp_path: Path,
    *,
    oracle: str,
    counterexamples: dict[str, str],
    expected_to_pass: frozenset[str] = frozenset(),
) -> Path:
    """A --scripts folder for the demo task: its oracle and counterexamples taken from the
    shipped demo scripts by name (``oracle`` may name a counterexample: a failing oracle).
    Each counterexample expects to fail EOG unless named in ``expected_to_pass``."""
    shipped = DEMO_SCRIPTS / TASK_ID
    folder = tmp_path / "scripts" / TASK_ID
    (folder / "counterexamples").mkdir(parents=True)

    def script(name: str) -> dict[str, Any]:
        path = shipped / (
            "oracle.script.json" if name == "oracle" else f"counterexamples/{name}.script.json"
        )
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded

    (folder / "oracle.script.json").write_text(json.dumps(script(oracle)))
    for new, old in counterexamples.items():
        played = script(old)
        played["expected"] = {"eog_success": new in expected_to_pass}
        (folder / "counterexamples" / f"{new}.script.json").write_text(json.dumps(played))
    return tmp_path / "scripts"


async def certify(
    tmp_path: Path,
    *,
    change: Callable[[dict[str, Any]], None] = lambda task: None,
    scripts: Path | None = DEMO_SCRIPTS,
) -> Certificate:
    task = demo_task()
    change(task)
    file = tmp_path / "task.variant.json"
    file.write_text(json.dumps(task))
    sources = load_sources([file])
    found = {}
    if scripts is not None:
        found = {k: load_task_scripts(v) for k, v in index_scripts(scripts).items()}
    async with LocalGym.demo() as gym:
        report = await certify_tasks(
            sources,
            directory=GymDirectory({gym.name: gym.url}),
            scripts=found,
            options=CertifyOptions(concurrency=3),
        )
        assert gym.database_ids() == []
    assert report.leaked == ()
    (certificate,) = report.certificates
    return certificate


def kinds(certificate: Certificate) -> list[tuple[str, str | None, str | None]]:
    return sorted((f.kind, f.verifier, f.mode) for f in certificate.findings)


async def test_demo_task_is_certified(tmp_path: Path) -> None:
    certificate = await certify(tmp_path)
    assert certificate.status == "certified"
    assert certificate.findings == ()
    checks = certificate.checks
    assert checks["do_nothing"] == {"strict": "fail", "parity": "fail", "holding_on_seed": []}
    assert checks["oracle"] == {"passed": True, "strict": "pass", "parity": "pass"}
    assert [c["name"] for c in checks["counterexamples"]] == [
        "no_action",
        "renewal_only",
        "wrong_end_date",
    ]
    assert not any(c["passed"] for c in checks["counterexamples"])
    assert checks["sensitivity"]["entitlement_renewed"] == {"shortest_prefix": 4, "of": 9}
    assert checks["sensitivity"]["customer_told"] == {"shortest_prefix": 9, "of": 9}
    assert checks["row_counts"]["telemetry_case_opened #3"] == {"seed": 0, "after_oracle": 1}


async def test_without_scripts_the_task_is_clean(tmp_path: Path) -> None:
    certificate = await certify(tmp_path, scripts=None)
    assert certificate.status == "clean"
    assert certificate.checks["oracle"] is None
    assert certificate.checks["sensitivity"] is None
    assert certificate.checks["counterexamples"] == []


async def test_verifier_holding_on_the_seed_is_insensitive(tmp_path: Path) -> None:
    def add(task: dict[str, Any]) -> None:
        task["verifiers"].append(
            verifier("account_exists", "SELECT COUNT(*) FROM account WHERE sys_id = 'acc_001'", 1)
        )

    certificate = await certify(tmp_path, change=add)
    assert certificate.status == "flagged"
    assert certificate.checks["do_nothing"]["holding_on_seed"] == ["account_exists"]
    assert certificate.checks["sensitivity"]["account_exists"]["shortest_prefix"] == 0
    assert kinds(certificate) == [("verifier_insensitive", "account_exists", None)]


async def test_task_passing_untouched(tmp_path: Path) -> None:
    def only_seed_truths(task: dict[str, Any]) -> None:
        task["verifiers"] = [verifier("account_exists", "SELECT COUNT(*) FROM account", 4)]

    certificate = await certify(tmp_path, change=only_seed_truths)
    found = kinds(certificate)
    assert ("passes_without_action", None, "strict") in found
    assert ("passes_without_action", None, "parity") in found
    assert ("counterexample_passes", None, "strict") in found  # every counterexample does


async def test_failing_oracle_and_passing_counterexample(tmp_path: Path) -> None:
    scripts = scripts_folder(
        tmp_path,
        oracle="wrong_end_date",
        counterexamples={"the_oracle": "oracle", "nothing": "no_action"},
    )
    certificate = await certify(tmp_path, scripts=scripts)
    assert certificate.status == "flagged"
    assert certificate.checks["oracle"]["passed"] is False
    assert certificate.checks["sensitivity"] is None  # only measured on a passing oracle
    assert kinds(certificate) == [
        ("counterexample_passes", None, "parity"),
        ("counterexample_passes", None, "strict"),
        ("oracle_fails", None, "parity"),
        ("oracle_fails", None, "strict"),
    ]
    assert "after_oracle" in certificate.checks["row_counts"]["entitlement_renewed"]


async def test_query_over_a_hundred_rows_and_query_the_seed_rejects(tmp_path: Path) -> None:
    def add(task: dict[str, Any]) -> None:
        task["verifiers"] += [
            verifier(
                "many_rows",
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 150) "
                "SELECT x FROM n;",
                1,
            ),
            verifier("no_table", "SELECT COUNT(*) FROM no_such_table", 0),
        ]

    certificate = await certify(tmp_path, change=add, scripts=None)
    counts = certificate.checks["row_counts"]
    assert counts["many_rows"] == {"seed": 150}
    assert counts["no_table"] == {"seed": None}
    found = kinds(certificate)
    assert ("truncated_on_gym", "many_rows", None) in found
    assert ("sql_fails_on_seed", "no_table", None) in found
    detail = next(f.detail for f in certificate.findings if f.kind == "sql_fails_on_seed")
    assert "no such table" in detail


async def test_counterexample_expected_to_pass_is_judged_as_its_author_expects(
    tmp_path: Path,
) -> None:
    """agentrelbench ships counterexamples that pass EOG and fail on damage alone
    (``expected.eog_success: true``): passing is no finding for them, failing is."""
    scripts = scripts_folder(
        tmp_path,
        oracle="oracle",
        counterexamples={"also_fine": "oracle", "idle": "no_action"},
        expected_to_pass=frozenset({"also_fine", "idle"}),
    )
    certificate = await certify(tmp_path, scripts=scripts)
    played = {c["name"]: c for c in certificate.checks["counterexamples"]}
    assert played["also_fine"]["expected"] == "pass" and played["also_fine"]["passed"] is True
    assert played["idle"]["expected"] == "pass" and played["idle"]["passed"] is False
    assert kinds(certificate) == [
        ("oracle_fails", None, "parity"),
        ("oracle_fails", None, "strict"),
    ]
    assert all("counterexample idle" in f.detail for f in certificate.findings)


@pytest.mark.parametrize("name", ["oracle.script.json", "counterexamples/x.script.json"])
def test_malformed_script_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    from eog_core.errors import SchemaError

    path = tmp_path / TASK_ID / name
    path.parent.mkdir(parents=True)
    path.write_text('{"script": [{"tool_calls": [{"arguments": {}}]}]}')
    with pytest.raises(SchemaError, match=r"tool_calls\[0\]") as caught:
        load_task_scripts(tmp_path / TASK_ID)
    assert name.split("/")[-1] in str(caught.value)


async def test_the_gyms_are_seeded_with_the_files_load_sources_hashed(tmp_path: Path) -> None:
    """A relative seed file found under load_sources' seed_root is the one seeded, with no
    seed_root handed to certify_tasks."""
    task = demo_task()
    task["gym_servers_config"][0]["seed_database_file"] = "seed.sql"
    (tmp_path / "seed.sql").write_bytes(demo_paths().seed_sql.read_bytes())
    (tmp_path / "task.json").write_text(json.dumps(task))
    (source,) = load_sources([tmp_path / "task.json"], seed_root=tmp_path)
    assert source.task.gym_servers[0].seed_database_file == str(tmp_path / "seed.sql")
    async with LocalGym.demo() as gym:
        report = await certify_tasks([source], directory=GymDirectory({gym.name: gym.url}))
    (certificate,) = report.certificates
    assert certificate.status == "clean", certificate.checks.get("incomplete")
