"""Snapshots of every real task's parsed form and verdicts (parity and strict).

Databases are synthesized so that every verifier query runs (``dbbuild``); the
first CSM task is also scored on its real seed fixture after the agent's
expected updates, so some verifiers pass. Prompts are snapshotted as length and
digest only: the task prose stays out of the repository.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from eog_core import PARITY, STRICT, SqliteSqlRunner, Task, load_task, load_tasks, verify_task
from tests.conftest import EOG_DATA, require_eog_data
from tests.verify.dbbuild import build_database

ENTITLEMENT_TASK = "task_20251205_153330_906_a8eea1c0_8c7a6205"


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def real_tasks() -> list[Task]:
    if not EOG_DATA.is_dir():
        return []
    tasks = load_tasks(EOG_DATA / "tasks")
    tasks += [t for t in load_tasks(EOG_DATA / "nemo-rows") if t.task_id not in {x.task_id for x in tasks}]
    return tasks


TASKS = real_tasks()


def digest(text: str) -> str:
    return f"{len(text)} chars, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}"


def parsed_form(task: Task) -> dict[str, Any]:
    data = task.to_upstream()
    data["system_prompt"] = digest(task.system_prompt)
    data["user_prompt"] = digest(task.user_prompt)
    for verifier in data["verifiers"]:
        verifier["description"] = digest(verifier.get("description") or "")
    return data


def databases_for(task: Task, folder: Path) -> dict[str, Path]:
    return {
        gym.name: build_database(folder / f"{gym.name}.sqlite", [
            v.validation_config.query for v in task.verifiers
            if (v.gym_name or task.gym_servers[0].name) == gym.name])
        for gym in task.gym_servers
    }


def test_real_tasks_are_present() -> None:
    require_eog_data()
    assert len(TASKS) == 14  # 13 upstream files + the hybrid row (other rows repeat them)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
async def test_parsed_form_and_verdicts(task: Task, tmp_path: Path, snapshot_json: SnapshotAssertion) -> None:
    with SqliteSqlRunner(databases_for(task, tmp_path)) as runner:
        parity = await verify_task(task, sql=runner, policy=PARITY)
        strict = await verify_task(task, sql=runner, policy=STRICT)
    assert strict.num_scored == len(task.verifiers)
    assert parity.num_scored == len({v.name for v in task.verifiers})
    assert snapshot_json == {"parsed": parsed_form(task), "parity": parity.to_dict(), "strict": strict.to_dict()}


async def test_entitlement_task_on_its_seed_fixture(tmp_path: Path, snapshot_json: SnapshotAssertion) -> None:
    data = require_eog_data()
    task = load_task(next((data / "tasks").rglob(f"{ENTITLEMENT_TASK}.json")))
    database = tmp_path / "final.sqlite"
    with sqlite3.connect(database) as connection:
        connection.executescript((data / "fixtures" / "seed_entitlement.sql").read_text())
    build_database(database, [v.validation_config.query for v in task.verifiers])
    with sqlite3.connect(database) as connection:  # what a correct agent does to entitlement 73
        connection.execute("UPDATE entitlement SET coverage_hours = 'h24x7', max_cases_per_month = 0, "
                           "sys_updated_on = '2026-01-02 10:00:00' WHERE entitlement_id = 73")
    with SqliteSqlRunner({"sn-csm-server": database}) as runner:
        parity = await verify_task(task, sql=runner, policy=PARITY)
        strict = await verify_task(task, sql=runner, policy=STRICT)
    by_name = {r.name: r for r in strict.results if r.name == "update_entitlement"}
    assert by_name  # the three update_entitlement checks ran
    assert sum(r.passed for r in strict.results) >= 3
    assert snapshot_json == {"parity": parity.to_dict(), "strict": strict.to_dict()}
