"""Loading every real task format, round trips, and schema errors with JSON paths."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from eog_core import SchemaError, load_task, load_tasks
from eog_core.tasks import (
    DatabaseStateVerifier,
    ResponseCheckVerifier,
    ToolExecutionVerifier,
    UnknownVerifier,
    load_tool_snapshots,
    merge_tools,
    task_from_mapping,
    task_record,
    to_upstream,
)
from tests.datasets import DataSet, upstream_files


def test_all_upstream_task_files_load(dataset: DataSet) -> None:
    files = upstream_files(dataset.root)
    assert len(files) == dataset.upstream_files
    tasks = [load_task(f) for f in files]
    assert all(isinstance(v, DatabaseStateVerifier) for t in tasks for v in t.verifiers)
    assert sum(len(t.verifiers) for t in tasks) == dataset.upstream_verifiers
    assert {t.domain for t in tasks} == dataset.domains
    assert [t.task_id for t in tasks] == [f.stem for f in files]


def test_all_nemo_rows_and_rollouts_load(dataset: DataSet) -> None:
    rows = load_tasks(dataset.root / "nemo-rows")
    assert len(rows) == dataset.nemo_tasks
    rollouts = load_tasks(dataset.root / "nemo-rows" / dataset.rollout_file)
    assert len(rollouts) == dataset.rollouts
    assert all(t.task_id and t.domain and t.mode == "oracle" for t in rows)
    hybrid = load_tasks(dataset.root / "nemo-rows" / dataset.hybrid_file)[0]
    assert hybrid.domain == "hybrid"
    assert [g.name for g in hybrid.gym_servers] == ["gym-teams-mcp", "gym-email-mcp"]


def test_round_trip_is_identity_on_every_file(dataset: DataSet) -> None:
    tasks = load_tasks(dataset.root / "tasks") + load_tasks(dataset.root / "nemo-rows")
    for task in tasks:  # an upstream task file has no task_id, domain or mode
        assert task_from_mapping(to_upstream(task)) == attrs.evolve(
            task, task_id=None, domain=None, mode=None
        )


def test_upstream_files_dump_back_unchanged(dataset: DataSet) -> None:
    for path in upstream_files(dataset.root):
        raw = json.loads(path.read_text())
        dumped = to_upstream(load_task(path))  # no task_id/domain added: upstream would refuse them
        assert json.dumps(dumped) == json.dumps(raw)


def test_dataset_row_with_json_string_fields(dataset: DataSet) -> None:
    raw = json.loads(upstream_files(dataset.root)[0].read_text())
    row = dict(
        raw,
        task_id="t1",
        domain="csm",
        mode="plus_5_tools",
        verifiers=json.dumps(raw["verifiers"]),
        gym_servers_config=json.dumps(raw["gym_servers_config"]),
    )
    task = load_task(row)
    assert (task.task_id, task.domain, task.mode) == ("t1", "csm", "plus_5_tools")
    assert task.verifiers == load_task(raw).verifiers


def test_private_legacy_and_dead_keys_are_accepted() -> None:
    task = load_task(
        {
            "_comment": "ignored",
            "user_prompt": "do it",
            "mcp_server_url": "http://localhost:8001",
            "database_id": "db_1",
            "context": {"x-user-email": "a@b.c"},
            "temperature": 0.2,
            "max_tokens": 100,
            "verifiers": [
                {
                    "verifier_type": "database_state",
                    "_note": "x",
                    "validation_config": {"query": "SELECT 1", "expected_value": 1},
                }
            ],
        }
    )
    assert task.gym_servers[0].name == "default_gym"
    assert task.gym_servers[0].url == "http://localhost:8001"
    assert task.legacy["database_id"] == "db_1"
    assert task_from_mapping(to_upstream(task)) == task


def test_verifier_kinds_form_a_tagged_union() -> None:
    task = load_task(
        {
            "user_prompt": "u",
            "gym_servers_config": [{"mcp_server_name": "g", "mcp_server_url": "http://g"}],
            "verifiers": [
                {
                    "verifier_type": "response_check",
                    "validation_config": {"sql_query": "SELECT 1", "comparison_prompt": "p"},
                },
                {
                    "verifier_type": "tool_execution",
                    "validation_config": {"selected_tools": ["a"], "minimum_tool_calls": 2},
                },
                {"verifier_type": "llm_vibes", "validation_config": {"anything": 1}},
            ],
        }
    )
    kinds = [type(v) for v in task.verifiers]
    assert kinds == [ResponseCheckVerifier, ToolExecutionVerifier, UnknownVerifier]
    assert task.verifiers[0].validation_config.minimum_comparison_value == 7
    assert task_from_mapping(to_upstream(task)) == task


def _mutated(raw: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(raw)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "json_path", "reason"),
    [
        (
            ["verifiers", 3, "validation_config", "query"],
            5,
            "$.verifiers[3].validation_config.query",
            "expected a string",
        ),
        (
            ["verifiers", 2, "validation_config", "surprise"],
            1,
            "$.verifiers[2].validation_config",
            "extra fields",
        ),
        (["verifiers", 1, "verifier_type"], KeyError, "$.verifiers[1]", "verifier_type"),
        (
            ["gym_servers_config", 0, "mcp_server_url"],
            KeyError,
            "$.gym_servers_config[0].mcp_server_url",
            "required",
        ),
        (
            ["gym_servers_config", 0, "context"],
            "x",
            "$.gym_servers_config[0].context",
            "expected an object",
        ),
        (
            ["gym_servers_config", 0, "auth_config"],
            {"type": "magic", "token": "t"},
            "$.gym_servers_config[0].auth_config.type",
            "expected one of",
        ),
        (["selected_tools"], "find_user", "$.selected_tools", "array of strings"),
        (["number_of_runs"], True, "$.number_of_runs", "got a boolean"),
        (["user_prompt"], KeyError, "$.user_prompt", "required field missing"),
        (["surprise"], 1, "$.surprise", "unknown key"),
        (["verifiers"], "[1,", "$.verifiers", "not a valid JSON string"),
    ],
)
def test_schema_errors_name_the_json_path_and_file(
    dataset: DataSet, path: list[Any], value: Any, json_path: str, reason: str
) -> None:
    source = upstream_files(dataset.root)[0]
    raw = json.loads(source.read_text())
    with pytest.raises(SchemaError) as info:
        task_from_mapping(_mutated(raw, path, value), source=str(source))
    assert info.value.path == json_path
    assert reason in str(info.value)
    assert str(source) in str(info.value)


def test_nemo_row_errors_point_into_verifier_metadata(dataset: DataSet) -> None:
    row = json.loads(
        (dataset.root / "nemo-rows" / dataset.itsm_rows_file).read_text().splitlines()[0]
    )
    row["verifier_metadata"]["verifiers"][1]["validation_config"]["comparison_type"] = 3
    with pytest.raises(SchemaError) as info:
        load_task(row)
    assert info.value.path == "$.verifier_metadata.verifiers[1].validation_config.comparison_type"


def test_bad_files_raise_schema_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SchemaError, match="invalid JSON at line 1"):
        load_task(broken)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"user_prompt": "ok", "gym_servers_config": [{"mcp_server_name": "g", "mcp_server_url": "u"}]}\n'
        "[1]\n"
    )
    with pytest.raises(SchemaError, match=r"rows\.jsonl:2"):
        load_tasks(rows)
    with pytest.raises(SchemaError, match="cannot read"):
        load_task(tmp_path / "missing.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SchemaError, match=r"no \.json"):
        load_tasks(tmp_path / "empty")


def test_tool_snapshots_merge_in_gym_order(dataset: DataSet) -> None:
    snapshots = load_tool_snapshots(dataset.root / "tools")
    assert sum(len(s.tools) for s in snapshots.values()) == dataset.tools_total
    owners = [
        name for name, snap in snapshots.items() if "list_users" in {t.name for t in snap.tools}
    ]
    assert len(owners) == 4
    task = load_task(
        {
            "user_prompt": "u",
            "gym_servers_config": [
                {"mcp_server_name": owners[2], "mcp_server_url": "http://a"},
                {"mcp_server_name": owners[0], "mcp_server_url": "http://b"},
            ],
        }
    )
    merged = merge_tools(task, snapshots)
    assert merged.owner("list_users") == owners[2]  # first gym of the task wins
    assert len(merged.names) == len(set(merged.names))
    selected = merge_tools(
        task_from_mapping(
            dict(
                to_upstream(task), selected_tools=["list_users", "nope"], restricted_tools=["nope"]
            )
        ),
        snapshots,
    )
    assert selected.names == ("list_users",)
    assert selected.missing == ("nope",)
    tool = selected.responses_tools()[0]
    assert (
        tool["type"] == "function"
        and tool["strict"] is False
        and tool["parameters"]["type"] == "object"
    )
    assert selected.chat_tools()[0]["function"]["name"] == "list_users"


def test_nemo_tool_lists_match_snapshot_merge(dataset: DataSet) -> None:
    """The tools a NeMo row offers are exactly our merge of the snapshots for its task."""
    snapshots = load_tool_snapshots(dataset.root / "tools")
    for line in (dataset.root / "nemo-rows" / dataset.csm_rows_file).read_text().splitlines():
        row = json.loads(line)
        task = load_task(row)
        offered = {t["name"] for t in row["responses_create_params"]["tools"]}
        assert set(merge_tools(task, snapshots).names) == offered


@pytest.mark.parametrize(
    ("raw", "json_path"),
    [
        ({"user_prompt": "u", "mcp_server_url": 5}, "$.mcp_server_url"),
        (
            {"user_prompt": "u", "mcp_server_url": "http://x", "database_id": "", "context": "zz"},
            "$.context",
        ),
        (
            {
                "verifier_metadata": {"verifiers": []},
                "responses_create_params": {
                    "input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]
                },
            },
            "$.responses_create_params.input[0].content",
        ),
        ({"user_prompt": "u", "verifiers": '[{"verifier_type": 3}]'}, "$.verifiers[0]"),
        ({"user_prompt": "u", "gym_servers_config": '{"a": 1}'}, "$.gym_servers_config"),
        ({"verifier_metadata": [], "responses_create_params": {}}, "$.verifier_metadata"),
        (
            {"verifier_metadata": {}, "responses_create_params": {"input": "hi"}},
            "$.responses_create_params.input",
        ),
    ],
)
def test_odd_shapes_are_schema_errors_with_paths(raw: dict[str, Any], json_path: str) -> None:
    with pytest.raises(SchemaError) as info:
        load_task(raw)
    assert info.value.path == json_path


def test_task_record_adds_the_names_upstream_files_lack_and_loads_back() -> None:
    from eog_core.local import load_demo_task

    task = attrs.evolve(task_from_mapping(load_demo_task()), task_id="t-1", domain="hr", mode=None)
    record = task_record(task)
    assert {k: record[k] for k in ("task_id", "domain")} == {"task_id": "t-1", "domain": "hr"}
    assert "mode" not in record  # unset names are left out, as upstream files have none
    assert to_upstream(task) == {k: v for k, v in record.items() if k not in ("task_id", "domain")}
    again = load_task(record)
    assert (again.task_id, again.domain, again.mode) == ("t-1", "hr", None)
