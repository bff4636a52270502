"""Property: loading anything ends in a Task or a SchemaError, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from eog_core import SchemaError, Task, load_task, load_tasks
from eog_core.tasks import task_from_mapping, to_upstream

pytestmark = pytest.mark.property

KEYS = [
    "user_prompt",
    "system_prompt",
    "verifiers",
    "gym_servers_config",
    "selected_tools",
    "restricted_tools",
    "mcp_endpoint",
    "number_of_runs",
    "reset_database_between_runs",
    "task_id",
    "domain",
    "mode",
    "mcp_server_url",
    "database_id",
    "context",
    "auth_config",
    "seed_database_file",
    "temperature",
    "max_tokens",
    "verifier_metadata",
    "responses_create_params",
    "_private",
    "unknown",
]
VERIFIER_KEYS = [
    "verifier_type",
    "name",
    "description",
    "gym_name",
    "validation_config",
    "query",
    "expected_value",
    "comparison_type",
    "sql_query",
    "comparison_prompt",
    "minimum_comparison_value",
    "selected_tools",
    "minimum_tool_calls",
]

plain_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(
        [
            "database_state",
            "response_check",
            "tool_execution",
            "equals",
            "bearer",
            "SELECT 1",
            "http://localhost:1",
            "{}",
            "[]",
        ]
    ),
    st.sampled_from([("9", 5000), ("[", 200), ("{", 150)]).map(lambda pair: pair[0] * pair[1]),
)
# Integers past the digit limit cannot be printed or JSON-encoded: only in mappings given directly.
huge_integers = st.sampled_from([4400, 5000]).map(lambda digits: 10**digits)


def values_of(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(
                st.sampled_from(KEYS + VERIFIER_KEYS) | st.text(max_size=8), children, max_size=5
            ),
        ),
        max_leaves=25,
    )


json_values = values_of(plain_scalars)
# A JSON string field (dataset rows carry verifiers and gyms as strings): valid, broken, or hostile.
encoded = st.one_of(
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.sampled_from([("[", 50_000), ("7", 5000)]).map(
        lambda pair: pair[0] * pair[1] if pair[0] == "[" else '[{"a": ' + pair[0] * pair[1] + "}]"
    ),
)
tasks = st.dictionaries(
    st.sampled_from(KEYS),
    st.one_of(values_of(plain_scalars | huge_integers), encoded),
    max_size=8,
)

# Near-valid tasks, so many load and the round trip is exercised too.
names = st.none() | st.text(max_size=10)


def verifiers_of(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    config = st.fixed_dictionaries(
        {},
        optional={
            "query": names,
            "expected_value": values,
            "comparison_type": st.sampled_from(["equals", "contains", "less_than"]) | names,
            "sql_query": names,
            "comparison_prompt": names,
            "minimum_comparison_value": st.integers() | st.floats(),
            "selected_tools": st.lists(st.text(max_size=5), max_size=3),
            "minimum_tool_calls": st.integers(),
        },
    )
    return st.fixed_dictionaries(
        {
            "verifier_type": st.sampled_from(["database_state", "response_check", "tool_execution"])
            | names
        },
        optional={
            "name": names,
            "gym_name": st.sampled_from(["g1", "g2"]) | names,
            "description": names,
            "validation_config": config,
        },
    )


auth = st.fixed_dictionaries(
    {"type": st.sampled_from(["bearer", "api_key"]) | names, "token": st.text(max_size=10)},
    optional={"header_name": st.text(max_size=10)},
)
gyms = st.fixed_dictionaries(
    {"mcp_server_name": st.sampled_from(["g1", "g2"]) | names, "mcp_server_url": names},
    optional={
        "seed_database_file": names,
        "context": st.dictionaries(st.text(max_size=6), names, max_size=3),
        "user_info": json_values,
        "mcp_endpoint": names,
        "auth_config": auth,
    },
)
verifier_lists = st.lists(
    verifiers_of(values_of(plain_scalars | huge_integers)), max_size=3
) | st.lists(verifiers_of(json_values), max_size=3).map(json.dumps)
plausible_tasks = st.fixed_dictionaries(
    {"user_prompt": st.text(max_size=20)},
    optional={
        "system_prompt": st.text(max_size=10),
        "verifiers": verifier_lists,
        "gym_servers_config": st.lists(gyms, max_size=2)
        | st.lists(gyms, max_size=2).map(json.dumps),
        "mcp_server_url": names,
        "auth_config": auth,
        "context": st.dictionaries(st.text(max_size=6), names),
        "selected_tools": st.none() | st.lists(st.text(max_size=5), max_size=3),
        "number_of_runs": st.integers(),
        "task_id": names,
        "domain": names,
        "mode": names,
    },
)


def load_or_schema_error(source: Any) -> Task | None:
    try:
        return load_task(source)
    except SchemaError:
        return None


@given(tasks | plausible_tasks)
@example(
    {
        "user_prompt": "x",
        "mcp_server_url": "http://x",
        "auth_config": {"type": "bearer", "token": "t"},
    }
)
def test_any_mapping_loads_or_is_a_schema_error(mapping: dict[str, Any]) -> None:
    task = load_or_schema_error(mapping)
    event("loaded" if task is not None else "SchemaError")
    if task is not None:  # a task that loads survives its own round trip (row keys aside)
        assert task_from_mapping(to_upstream(task)) == attrs.evolve(
            task, task_id=None, domain=None, mode=None
        )


@given(st.binary(max_size=300) | json_values.map(lambda value: json.dumps(value).encode()))
@example(b'{"user_prompt": "\xff"}')
@example(b"[" * 100_000)
@example(b'{"user_prompt": "x", "number_of_runs": ' + b"1" * 5000 + b"}")
def test_any_bytes_load_or_are_a_schema_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name in ("task.json", "rows.jsonl"):
            path = Path(folder) / name
            path.write_bytes(content)
            error: SchemaError | None = None
            try:
                load_tasks(path)
            except SchemaError as exc:
                error = exc
            assert error is None or (error.source or "").startswith(str(path))
