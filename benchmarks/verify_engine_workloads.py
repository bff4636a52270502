"""Verifier-engine workloads shared by bench_verify_engine.py and verify_engine_vs_ref.py.

Each workload is a task with 5 ``database_state`` verifiers and the canned
``SqlOutcome`` bodies an in-process runner answers its queries with, so only the
engine's CPU is measured (no database, no HTTP). ``module`` is the package the
task and outcomes are built with (``eog_core``, or a renamed copy of another
revision for a side-by-side run).
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

GYM = "sn-csm-server"

#: benchmarks/lifecycle_vs_floor.py's task: the demo queries, expected_value None.
DEMO = [
    (
        "SELECT status FROM entitlement WHERE sys_id = 'ent_002'",
        None,
        "equals",
        [{"status": "active"}],
    ),
    (
        "SELECT COUNT(*) FROM \"case\" WHERE account_id = 'acc_001'",
        None,
        "equals",
        [{"COUNT(*)": 3}],
    ),
    ("SELECT state FROM \"case\" WHERE number = 'CS0001003'", None, "equals", [{"state": "new"}]),
    (
        "SELECT COUNT(*) FROM contact WHERE account_id = 'acc_001'",
        None,
        "equals",
        [{"COUNT(*)": 2}],
    ),
    (
        "SELECT name FROM account WHERE sys_id = 'acc_001'",
        None,
        "equals",
        [{"name": "Harbor Lane"}],
    ),
]

#: Shaped like the revised CSM tasks: strings, integers, counts, a timestamp, a contains.
REALISTIC = [
    (
        "SELECT coverage_hours FROM entitlement WHERE entitlement_id = 73;",
        "h24x7",
        "equals",
        [{"coverage_hours": "h24x7"}],
    ),
    (
        "SELECT max_cases_per_month FROM entitlement WHERE entitlement_id = 73;",
        0,
        "equals",
        [{"max_cases_per_month": 0}],
    ),
    (
        "SELECT COUNT(*) FROM entitlement WHERE entitlement_id = 73 AND sys_updated_on IS NOT NULL",
        1,
        "equals",
        [{"COUNT(*)": 1}],
    ),
    (
        "SELECT sys_updated_on FROM entitlement WHERE entitlement_id = 73",
        "2025-01-01 00:00:00",
        "greater_than",
        [{"sys_updated_on": "2025-12-05 15:33:30"}],
    ),
    (
        "SELECT short_description FROM \"case\" WHERE number = 'CS0001003'",
        "printer",
        "contains",
        [{"short_description": "Office printer offline since Monday"}],
    ),
]

WORKLOADS = {"demo": DEMO, "realistic": REALISTIC}


def build_task(module: ModuleType, checks: list[tuple[str, Any, str, Any]]) -> Any:
    return module.load_task(
        {
            "user_prompt": "u",
            "gym_servers_config": [
                {
                    "mcp_server_name": GYM,
                    "mcp_server_url": "http://localhost:8100",
                    "context": {"instance": "bench"},
                }
            ],
            "verifiers": [
                {
                    "verifier_type": "database_state",
                    "name": f"v{i}",
                    "gym_name": GYM,
                    "validation_config": {
                        "query": query,
                        "expected_value": expected,
                        "comparison_type": kind,
                    },
                }
                for i, (query, expected, kind, _) in enumerate(checks)
            ],
        }
    )


class CannedRunner:
    """Answers each query with its canned outcome; ``suspend`` yields to the loop once, as I/O would."""

    def __init__(
        self, module: ModuleType, checks: list[tuple[str, Any, str, Any]], *, suspend: bool
    ) -> None:
        # the gym's answer bytes, decoded per call as the HTTP runner does (gym/_sql_answer.py)
        self.bodies = {query: json.dumps({"data": rows}).encode() for query, _, _, rows in checks}
        self.answer = importlib.import_module(f"{module.__name__}.gym._sql_answer").sql_answer
        self.suspend = suspend

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> Any:
        if self.suspend:
            await asyncio.sleep(0)
        return self.answer(self.bodies[query])


async def verify_many(
    module: ModuleType, task: Any, runner: CannedRunner, policy: Any, count: int
) -> Any:
    verdict = None
    for _ in range(count):
        verdict = await module.verify_task(
            task, sql=runner, policy=policy, database_ids={GYM: "db-1"}
        )
    return verdict
