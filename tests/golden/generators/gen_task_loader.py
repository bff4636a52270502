"""Run upstream's ``load_config`` on task files and write tests/golden/task_loader.json.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_task_loader.py

Each case is a task file (a real one from ``EOG_DATA_DIR/tasks`` with its prose
replaced and its first three verifiers only, a mutation of one, or a small synthetic one) and what upstream's
``evaluate.load_config`` does with it: accepted (with the ``BenchmarkConfig``
it built, as the sha256 of its JSON) or the exception it raised. ``written`` is the same file
with what an upstream task file cannot carry removed (``_`` comment keys at the
top level and in verifiers, which ``load_config`` drops, and the dataset-row
keys ``task_id``/``domain``/``mode``, which it refuses) and upstream's verdict
on it: what ``to_upstream(task)`` must write (null: the task itself).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import upstream_harness as harness

SEED = 11
PER_REAL = 30
SYNTHETIC = 300
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
OUT = HERE.parent / "task_loader.json"
DATA = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))
PLACEHOLDER = "<prose withheld>"
ROW_KEYS = ("task_id", "domain", "mode")


def withheld(task: dict[str, Any]) -> dict[str, Any]:
    """A real task with its prose replaced and only its first three verifiers (size)."""
    out = copy.deepcopy(task)
    out["verifiers"] = out.get("verifiers", [])[:3]
    for key in ("system_prompt", "user_prompt"):
        if key in out:
            out[key] = PLACEHOLDER
    for verifier in out.get("verifiers", []):
        if "description" in verifier:
            verifier["description"] = PLACEHOLDER
    return out


def synthetic(rng: random.Random) -> dict[str, Any]:
    return {
        "system_prompt": "<system prompt>",
        "user_prompt": "<user prompt>",
        "gym_servers_config": [{"mcp_server_name": "gym-a", "mcp_server_url": "http://a.test"}],
        "verifiers": [
            {
                "verifier_type": "database_state",
                "name": "v",
                "validation_config": {"query": "SELECT 1", "expected_value": rng.randint(0, 3)},
            }
        ],
    }


MUTATIONS = [
    "none",
    "gym_database_id_empty",
    "gym_database_id_preset",
    "gym_context_null",
    "gym_extra_keys",
    "private_keys",
    "row_keys",
    "missing_system_prompt",
    "missing_user_prompt",
    "gyms_empty",
    "gyms_not_list",
    "gym_not_object",
    "gym_missing_name",
    "gym_missing_url",
    "legacy_single_gym",
    "legacy_without_database_id",
    "legacy_and_multi",
    "no_gyms_at_all",
    "verifiers_missing",
    "verifiers_null",
    "top_level_unknown_key",
    "verifier_without_validation_config",
    "verifier_private_key",
    "top_context_null",
    "dup_gym",
    "minimum_int",
    "selected_tools_null",
    "reordered_keys",
]


def mutate(task: dict[str, Any], kind: str, rng: random.Random) -> dict[str, Any]:
    task = copy.deepcopy(task)
    gyms = task.get("gym_servers_config", [])
    first = gyms[0] if gyms else {}
    if kind == "gym_database_id_empty":
        first["database_id"] = ""
    elif kind == "gym_database_id_preset":
        first["database_id"] = "db_preset_1"
    elif kind == "gym_context_null":
        first["context"] = None
    elif kind == "gym_extra_keys":
        first.update({"description": "primary", "timeout": 30})
    elif kind == "private_keys":
        task = {"_comment": "ignored", **task}
    elif kind == "row_keys":
        task = {"task_id": "t-1", "domain": "csm", **task}
    elif kind == "missing_system_prompt":
        task.pop("system_prompt", None)
    elif kind == "missing_user_prompt":
        task.pop("user_prompt", None)
    elif kind == "gyms_empty":
        task["gym_servers_config"] = []
    elif kind == "gyms_not_list":
        task["gym_servers_config"] = first
    elif kind == "gym_not_object":
        task["gym_servers_config"] = ["gym-a"]
    elif kind == "gym_missing_name":
        first.pop("mcp_server_name", None)
    elif kind == "gym_missing_url":
        first.pop("mcp_server_url", None)
    elif kind in ("legacy_single_gym", "legacy_without_database_id"):
        task.pop("gym_servers_config", None)
        task["mcp_server_url"] = "http://legacy.test"
        if kind == "legacy_single_gym":
            task["database_id"] = rng.choice(["", "db_legacy"])
    elif kind == "legacy_and_multi":
        task["mcp_server_url"] = "http://legacy.test"
    elif kind == "no_gyms_at_all":
        task.pop("gym_servers_config", None)
    elif kind == "verifiers_missing":
        task.pop("verifiers", None)
    elif kind == "verifiers_null":
        task["verifiers"] = None
    elif kind == "top_level_unknown_key":
        task["temperature_typo"] = 0.2
    elif kind == "verifier_without_validation_config" and task.get("verifiers"):
        task["verifiers"][0].pop("validation_config", None)
    elif kind == "verifier_private_key" and task.get("verifiers"):
        task["verifiers"][0] = {"_description": "note", **task["verifiers"][0]}
    elif kind == "top_context_null":
        task["context"] = None
    elif kind == "dup_gym" and gyms:
        gyms.append(dict(first, mcp_server_url="http://dup.test"))
    elif kind == "minimum_int":
        task.setdefault("verifiers", []).append(
            {
                "verifier_type": "response_check",
                "name": "judged",
                "validation_config": {
                    "sql_query": "SELECT 1",
                    "comparison_prompt": "p",
                    "minimum_comparison_value": rng.choice([7, 7.0, None]),
                },
            }
        )
    elif kind == "selected_tools_null":
        task["selected_tools"] = None
    elif kind == "reordered_keys":
        keys = list(task)
        rng.shuffle(keys)
        task = {k: task[k] for k in keys}
    return task


def written_form(task: dict[str, Any]) -> dict[str, Any]:
    """What an upstream task file of this task holds: no ``_`` keys (top, verifiers), no row keys."""
    out = {k: v for k, v in task.items() if not k.startswith("_") and k not in ROW_KEYS}
    if isinstance(out.get("verifiers"), list):
        out["verifiers"] = [
            {k: v for k, v in verifier.items() if not k.startswith("_")}
            if isinstance(verifier, dict)
            else verifier
            for verifier in out["verifiers"]
        ]
    return out


def upstream_verdict(up: Any, task: dict[str, Any], folder: Path) -> dict[str, Any]:
    path = folder / "task.json"
    path.write_text(json.dumps(task), encoding="utf-8")
    try:
        config = up.evaluate.load_config(str(path))
    except Exception as exc:
        return {"accepted": False, "error": f"{type(exc).__name__}: {exc}"}
    text = json.dumps(dataclasses.asdict(config), default=str, sort_keys=True)
    return {"accepted": True, "config_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def main() -> None:
    up = harness.import_upstream()
    rng = random.Random(SEED)
    real_files = sorted((DATA / "tasks").rglob("*.json"))
    if not real_files:
        sys.exit(f"no real task files under {DATA / 'tasks'} (set EOG_DATA_DIR)")
    cases: list[dict[str, Any]] = []
    bases = [("real", withheld(json.loads(p.read_text(encoding="utf-8")))) for p in real_files]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)

        def add(origin: str, base: dict[str, Any], kind: str) -> None:
            task = mutate(base, kind, rng)
            written = written_form(task)
            cases.append(
                {
                    "origin": origin,
                    "mutation": kind,
                    "task": task,
                    "upstream": upstream_verdict(up, task, folder),
                    "written": None if written == task else written,
                    "written_upstream": upstream_verdict(up, written, folder),
                }
            )

        for origin, base in bases:
            for kind in MUTATIONS:
                add(origin, base, kind)
            for _ in range(PER_REAL - len(MUTATIONS)):
                add(origin, base, rng.choice(MUTATIONS))
        for _ in range(SYNTHETIC):
            add("synthetic", synthetic(rng), rng.choice(MUTATIONS))
    OUT.write_text(
        json.dumps(
            {
                "generator_seed": SEED,
                "upstream": "ServiceNow/EnterpriseOps-Gym@271f2c3",
                "cases": cases,
            },
            separators=(",", ":"),
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
