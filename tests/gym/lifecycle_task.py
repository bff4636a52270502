"""The demo task with five ``database_state`` verifiers: the lifecycle that #12's
request-count test and the lifecycle benchmarks (``benchmarks/``) run."""

from __future__ import annotations

import json

from eog_core import Task, load_task
from eog_core.local import DEMO_SERVER_NAME, demo_paths

__all__ = ["QUERIES", "TOOL", "five_verifier_task"]

QUERIES = [
    "SELECT status FROM entitlement WHERE sys_id = 'ent_002'",
    "SELECT COUNT(*) FROM \"case\" WHERE account_id = 'acc_001'",
    "SELECT state FROM \"case\" WHERE number = 'CS0001003'",
    "SELECT COUNT(*) FROM contact WHERE account_id = 'acc_001'",
    "SELECT name FROM account WHERE sys_id = 'acc_001'",
]
TOOL = ("find_account", {"name": "Harbor Lane"})


def five_verifier_task() -> Task:
    raw = json.loads(demo_paths().task.read_text())
    raw["verifiers"] = [
        {
            "verifier_type": "database_state",
            "name": f"v{i}",
            "gym_name": DEMO_SERVER_NAME,
            "validation_config": {"query": query, "expected_value": None},
        }
        for i, query in enumerate(QUERIES)
    ]
    return load_task(raw)
