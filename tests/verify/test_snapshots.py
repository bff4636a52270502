"""Snapshots of every task's parsed form and verdicts (parity and strict), ours and the real ones.

Databases are synthesized so that every verifier query runs (``dbbuild``); the
first CSM task is also scored on its real seed fixture after the agent's
expected updates, so some verifiers pass. Prompts are snapshotted as length and
digest only: the task prose stays out of the repository.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from eog_core import PARITY, STRICT, SqliteSqlRunner, Task, load_task, load_tasks, verify_task
from eog_core.tasks import to_upstream
from tests.conftest import require_eog_data
from tests.datasets import EXAMPLES
from tests.verify.dbbuild import build_database

ENTITLEMENT_TASK = "task_20251205_153330_906_a8eea1c0_8c7a6205"
EXAMPLE_ENTITLEMENT_TASK = "task_example_entitlement_upgrade"


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


# The real tasks, named here so that the parametrized ids (and so the committed
# snapshot names) exist without the data: a skipped test's snapshot is then not
# judged unused, and a run without ../shared/eog-data passes.
TASK_IDS = (
    "hybrid_synthetic_channel_label",
    "task_20251205_153330_906_a8eea1c0_8c7a6205",
    "task_20251205_154853_044_d4a463c3_fce76046",
    "task_20251209_132736_542_99ba2325_6705caf4",
    "task_20251210_002938_761_897c3e0b_f075229a",
    "task_20251210_113549_827_d4a463c3_47b48a98",
    "task_20251212_172511_458_e6427839_47076c15",
    "task_20251231_162628_797_a8eea1c0_0a53db6c",
    "task_20260101_043715_660_a8eea1c0_7304e48e",
    "task_20260101_122222_300_ad5a67e3_3757206c",
    "task_20260102_155148_014_accab84d_910b176a",
    "task_20260102_161510_799_ad5a67e3_7221f3c8",
    "task_20260102_172945_725_ad5a67e3_5480e26f",
    "task_20260104_202644_765_00364ece_a86667c0",
)


def tasks_of(root: Path) -> dict[str, Task]:
    """Every task of a data folder by id: the upstream files plus the rows whose id no file has."""
    tasks = {t.task_id: t for t in load_tasks(root / "tasks")}
    for task in load_tasks(root / "nemo-rows"):
        tasks.setdefault(task.task_id, task)
    return tasks


@functools.cache
def real_tasks() -> dict[str, Task]:
    return tasks_of(require_eog_data())


EXAMPLE_TASKS = tasks_of(EXAMPLES)


def digest(text: str) -> str:
    return f"{len(text)} chars, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}"


def parsed_form(task: Task) -> dict[str, Any]:
    data = to_upstream(task)
    data["system_prompt"] = digest(task.system_prompt)
    data["user_prompt"] = digest(task.user_prompt)
    for verifier in data["verifiers"]:
        verifier["description"] = digest(verifier.get("description") or "")
    return data


def databases_for(task: Task, folder: Path) -> dict[str, Path]:
    return {
        gym.name: build_database(
            folder / f"{gym.name}.sqlite",
            [
                v.validation_config.query
                for v in task.verifiers
                if (v.gym_name or task.gym_servers[0].name) == gym.name
            ],
        )
        for gym in task.gym_servers
    }


def test_real_tasks_are_present() -> None:
    # 13 upstream files + the hybrid row (other rows repeat them)
    assert sorted(real_tasks()) == sorted(TASK_IDS)


@pytest.mark.parametrize("task_id", [*TASK_IDS, *sorted(EXAMPLE_TASKS)])
async def test_parsed_form_and_verdicts(
    task_id: str, tmp_path: Path, snapshot_json: SnapshotAssertion
) -> None:
    task = EXAMPLE_TASKS[task_id] if task_id in EXAMPLE_TASKS else real_tasks()[task_id]
    with SqliteSqlRunner(databases_for(task, tmp_path)) as runner:
        parity = await verify_task(task, sql=runner, policy=PARITY)
        strict = await verify_task(task, sql=runner, policy=STRICT)
    assert strict.num_scored == len(task.verifiers)
    assert parity.num_scored == len({v.name for v in task.verifiers})
    assert snapshot_json == {
        "parsed": parsed_form(task),
        "parity": parity.to_dict(repeat=0),
        "strict": strict.to_dict(),
    }


async def test_entitlement_task_on_its_seed_fixture(
    tmp_path: Path, snapshot_json: SnapshotAssertion
) -> None:
    data = require_eog_data()
    task = load_task(next((data / "tasks").rglob(f"{ENTITLEMENT_TASK}.json")))
    database = tmp_path / "final.sqlite"
    with sqlite3.connect(database) as connection:
        connection.executescript((data / "fixtures" / "seed_entitlement.sql").read_text())
    build_database(database, [v.validation_config.query for v in task.verifiers])
    with sqlite3.connect(database) as connection:  # what a correct agent does to entitlement 73
        connection.execute(
            "UPDATE entitlement SET coverage_hours = 'h24x7', max_cases_per_month = 0, "
            "sys_updated_on = '2026-01-02 10:00:00' WHERE entitlement_id = 73"
        )
    with SqliteSqlRunner({"sn-csm-server": database}) as runner:
        parity = await verify_task(task, sql=runner, policy=PARITY)
        strict = await verify_task(task, sql=runner, policy=STRICT)
    by_name = {r.name: r for r in strict.results if r.name == "update_entitlement"}
    assert by_name  # the three update_entitlement checks ran
    assert sum(r.passed for r in strict.results) >= 3
    assert snapshot_json == {"parity": parity.to_dict(), "strict": strict.to_dict()}


async def test_example_entitlement_task_on_its_seed_fixture(
    tmp_path: Path, snapshot_json: SnapshotAssertion
) -> None:
    """The same scoring on our own example task and seed: runs without the real data."""
    task = EXAMPLE_TASKS[EXAMPLE_ENTITLEMENT_TASK]
    database = tmp_path / "final.sqlite"
    with sqlite3.connect(database) as connection:
        connection.executescript((EXAMPLES / "fixtures" / "seed_entitlement.sql").read_text())
        # what a correct agent does to entitlement 41
        connection.execute(
            "UPDATE entitlement SET coverage_hours = 'h24x7', max_cases_per_month = 0 "
            "WHERE entitlement_id = 41"
        )
    with SqliteSqlRunner({"sn-csm-server": database}) as runner:
        parity = await verify_task(task, sql=runner, policy=PARITY)
        strict = await verify_task(task, sql=runner, policy=STRICT)
    assert strict.success and not parity.success  # "1" vs COUNT(*) = 1: unwinnable upstream only
    assert [r.passed for r in strict.results] == [True, True, True]
    assert parity.num_scored == 2  # the two update_entitlement checks collapse to the last
    assert snapshot_json == {"parity": parity.to_dict(), "strict": strict.to_dict()}
