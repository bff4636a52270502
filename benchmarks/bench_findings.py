"""Static findings for 10,000 tasks: copies of the shared tasks with new ids (issue #31).

Target: under 5 s for the 10,000, start-up excluded (the copies are built and the
tool snapshots read before timing). Each round starts with the per-query caches
empty, so it pays once for every distinct verifier query, as a first run would.
Reads ``../shared/eog-data`` (or ``EOG_DATA_DIR``) when present, else ``examples/``.

Run with ``nox -s bench -- -k findings`` or
``pytest benchmarks/bench_findings.py -o python_files='bench_*.py'``.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from eog_core.certify import _static_rows, _static_sql, task_findings
from eog_core.tasks import (
    DatabaseStateVerifier,
    Task,
    ToolSnapshot,
    load_tasks,
    load_tool_snapshots,
)

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))
DATA = SHARED if SHARED.is_dir() else REPO / "examples"
TASKS = 10_000


def _copies() -> list[Task]:
    files = sorted((DATA / "tasks").rglob("*.json")) + sorted((DATA / "nemo-rows").glob("*.jsonl"))
    shared = [task for file in files for task in load_tasks(file)]
    return [attrs.evolve(shared[n % len(shared)], task_id=f"copy_{n:05d}") for n in range(TASKS)]


@pytest.fixture(scope="module")
def copies() -> list[Task]:
    return _copies()


@pytest.fixture(scope="module")
def snapshots() -> dict[str, ToolSnapshot]:
    return load_tool_snapshots(DATA / "tools")


def _cold() -> None:
    for cached in (
        _static_sql.tokens,
        _static_sql.statements,
        _static_sql.parse_problem,
        _static_sql.clock_reads,
        _static_rows._shape,
    ):
        cached.cache_clear()


def _all_findings(tasks: list[Task], snapshots: dict[str, ToolSnapshot] | None) -> int:
    return sum(len(task_findings(task, source="copy", tools=snapshots)) for task in tasks)


def test_findings_of_10000_tasks(benchmark: BenchmarkFixture, copies: list[Task]) -> None:
    found = benchmark.pedantic(
        _all_findings, args=(copies, None), setup=_cold, rounds=5, iterations=1
    )
    benchmark.extra_info.update(tasks=len(copies), findings=found, data=str(DATA))


def test_findings_of_10000_tasks_with_tools(
    benchmark: BenchmarkFixture, copies: list[Task], snapshots: dict[str, ToolSnapshot]
) -> None:
    found = benchmark.pedantic(
        _all_findings, args=(copies, snapshots), setup=_cold, rounds=5, iterations=1
    )
    benchmark.extra_info.update(tasks=len(copies), findings=found, data=str(DATA))


def _distinct(tasks: list[Task]) -> list[Task]:
    """The copies with every verifier query made unique (a trailing comment): no cache hits."""
    changed = []
    for number, task in enumerate(tasks):
        verifiers = tuple(
            attrs.evolve(
                verifier,
                validation_config=attrs.evolve(
                    verifier.validation_config,
                    query=f"{verifier.validation_config.query}\n-- copy {number}",
                ),
            )
            if isinstance(verifier, DatabaseStateVerifier) and verifier.validation_config.query
            else verifier
            for verifier in task.verifiers
        )
        changed.append(attrs.evolve(task, verifiers=verifiers))
    return changed


def test_findings_of_10000_tasks_every_query_distinct(
    benchmark: BenchmarkFixture, copies: list[Task]
) -> None:
    """Not the target: the worst case, where no query text repeats and no cache helps."""
    distinct = _distinct(copies)
    found = benchmark.pedantic(
        _all_findings, args=(distinct, None), setup=_cold, rounds=1, iterations=1
    )
    benchmark.extra_info.update(tasks=len(copies), findings=found, data=str(DATA))
