"""Reading, the records and writing are separate (#19): ``legacy`` is verbatim, and the
record module imports neither the converter nor the writer."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import attrs

from eog_core.tasks import _schema, load_task, task_from_mapping, to_upstream

LEGACY: dict[str, Any] = {
    "user_prompt": "close the ticket",
    "mcp_server_url": "http://legacy.test:8001/mcp",
    "database_id": "db_1",
    "temperature": 0.2,
    "verifiers": [],
}


def test_legacy_keeps_exactly_the_legacy_keys_of_the_file() -> None:
    task = task_from_mapping(LEGACY)
    assert dict(task.legacy) == {
        "mcp_server_url": "http://legacy.test:8001/mcp",
        "database_id": "db_1",
        "temperature": 0.2,
    }
    assert task.gym_from_legacy_keys
    assert [gym.name for gym in task.gym_servers] == ["default_gym"]


def test_a_gym_built_from_legacy_keys_is_written_back_as_those_keys() -> None:
    written = to_upstream(task_from_mapping(LEGACY))
    assert "gym_servers_config" not in written
    assert written == {"system_prompt": "", **LEGACY}


def test_a_listed_gym_is_not_taken_for_a_legacy_one() -> None:
    listed = task_from_mapping(
        {
            "user_prompt": "p",
            "mcp_server_url": "http://ignored.test",
            "gym_servers_config": [{"mcp_server_name": "g", "mcp_server_url": "http://g.test"}],
        }
    )
    assert not listed.gym_from_legacy_keys
    assert [gym["mcp_server_name"] for gym in to_upstream(listed)["gym_servers_config"]] == ["g"]


def test_built_in_code_the_task_writes_its_gyms() -> None:
    task = attrs.evolve(load_task(LEGACY), source_keys=None, gym_from_legacy_keys=False)
    assert (
        to_upstream(task)["gym_servers_config"][0]["mcp_server_url"]
        == "http://legacy.test:8001/mcp"
    )


def test_the_records_import_nothing_of_their_package() -> None:
    tree = ast.parse(inspect.getsource(_schema))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.startswith("eog_core.tasks")}
