"""Task edges from the second review (#20): legacy rows, NeMo typos, duplicate snapshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core import SchemaError, load_task, to_nemo_row
from eog_core.tasks import load_tool_snapshots

LEGACY: dict[str, Any] = {
    "user_prompt": "close the ticket",
    "mcp_server_url": "http://legacy.test:8001/mcp",
    "database_id": "db_1",
    "context": {"x-user-email": "a@b.c"},
    "verifiers": [
        {
            "verifier_type": "database_state",
            "name": "v",
            "validation_config": {"query": "SELECT 1", "expected_value": 1},
        }
    ],
}


def test_a_legacy_single_gym_task_survives_its_nemo_row() -> None:
    task = load_task(LEGACY)
    row = to_nemo_row(task, {})
    assert "gym_servers_config" not in row["verifier_metadata"]
    back = load_task(json.loads(json.dumps(row)))
    assert back.gym_servers == task.gym_servers
    assert back.gym_servers[0].url == "http://legacy.test:8001/mcp"
    assert dict(back.gym_servers[0].context) == {"x-user-email": "a@b.c"}
    assert back.legacy["database_id"] == "db_1"
    assert back.verifiers == task.verifiers


def test_a_typo_in_verifier_metadata_is_refused() -> None:
    row = to_nemo_row(load_task(LEGACY), {})
    row["verifier_metadata"]["verifers"] = row["verifier_metadata"].pop("verifiers")
    with pytest.raises(SchemaError, match="unknown key 'verifers'") as info:
        load_task(row)
    assert info.value.path == "$.verifier_metadata.verifers"


def test_tool_to_gym_and_private_keys_still_load() -> None:
    row = to_nemo_row(load_task(LEGACY), {})
    row["verifier_metadata"]["_note"] = "ignored, as upstream ignores _ keys"
    assert load_task(row).user_prompt == "close the ticket"


def test_two_snapshots_of_one_gym_are_refused(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps({"gym_name": "gym-a", "tools": []}))
    with pytest.raises(SchemaError, match="second tool snapshot of gym 'gym-a'") as info:
        load_tool_snapshots(tmp_path)
    assert info.value.source == str(tmp_path / "b.json")
    assert str(tmp_path / "a.json") in str(info.value)
