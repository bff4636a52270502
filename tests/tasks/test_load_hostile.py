"""Hostile task files: bad bytes, deep nesting and huge integers are SchemaErrors naming the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eog_core import SchemaError, load_task, load_tasks
from eog_core._json import MAX_DEPTH, decode_json, nesting_depth
from eog_core.local import demo_paths

DEEP = "[" * 100_000 + "]" * 100_000
GYMS = [{"mcp_server_name": "g", "mcp_server_url": "http://localhost:1"}]


def nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    current = root
    for _ in range(depth - 1):
        child: list[Any] = []
        current.append(child)
        current = child
    return root


def test_non_utf8_file_names_the_file_and_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"user_prompt": "caf\xe9"}')
    with pytest.raises(SchemaError) as caught:
        load_task(path)
    assert caught.value.source == str(path)
    assert caught.value.offset == 20
    assert "not UTF-8: invalid byte 0xe9 at byte offset 20" in str(caught.value)


def test_binary_file_is_a_schema_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SchemaError, match="byte offset 128") as caught:
        load_task(path)
    assert caught.value.source == str(path)


def test_non_utf8_row_names_the_line_and_the_file_offset(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    first = b'{"user_prompt": "fine", "gym_servers_config": ' + json.dumps(GYMS).encode() + b"}\n"
    path.write_bytes(first + b'{"user_prompt": "\xff"}\n')
    with pytest.raises(SchemaError) as caught:
        load_tasks(path)
    assert caught.value.source == f"{path}:2"
    assert caught.value.offset == len(first) + 17


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_deeply_nested_file_is_a_schema_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(DEEP)
    with pytest.raises(SchemaError, match=f"nested deeper than {MAX_DEPTH} levels") as caught:
        load_tasks(path)
    assert caught.value.source in (str(path), f"{path}:1")


@pytest.mark.parametrize("key", ["verifiers", "gym_servers_config"])
def test_deeply_nested_string_field_is_a_schema_error(tmp_path: Path, key: str) -> None:
    path = tmp_path / "row.json"
    path.write_text(json.dumps({"user_prompt": "x", key: DEEP}))
    with pytest.raises(SchemaError, match="nested deeper") as caught:
        load_task(path)
    assert (caught.value.path, caught.value.source) == (f"$.{key}", str(path))


def test_moderately_deep_values_below_recursion_but_over_the_cap_are_refused() -> None:
    # Deep enough for json.loads, too deep for comparison and repr to be safe everywhere.
    verifier = {
        "verifier_type": "database_state",
        "validation_config": {"query": "SELECT 1", "expected_value": nested_list(MAX_DEPTH)},
    }
    with pytest.raises(SchemaError, match="nested deeper"):
        load_task({"user_prompt": "x", "verifiers": [verifier], "gym_servers_config": GYMS})
    verifier["validation_config"]["expected_value"] = nested_list(MAX_DEPTH - 10)
    assert load_task(
        {"user_prompt": "x", "verifiers": [verifier], "gym_servers_config": GYMS}
    ).verifiers


def test_deep_mapping_given_directly_is_a_schema_error() -> None:
    verifier = {
        "verifier_type": "database_state",
        "validation_config": {"query": "SELECT 1", "expected_value": nested_list(100_000)},
    }
    with pytest.raises(SchemaError, match="nested deeper"):
        load_task({"user_prompt": "x", "verifiers": [verifier]})


def test_integer_over_the_digit_limit_is_a_schema_error(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    prefix = '{"user_prompt": "x", "number_of_runs": '
    path.write_text(prefix + "9" * 5000 + "}")
    with pytest.raises(SchemaError, match="more than 4300 digits") as caught:
        load_task(path)
    assert (caught.value.source, caught.value.offset) == (str(path), len(prefix))


def test_integer_in_a_string_field_is_a_schema_error() -> None:
    verifiers = (
        '[{"verifier_type": "database_state", "validation_config": {"expected_value": '
        + "1" * 5000
        + "}}]"
    )
    with pytest.raises(SchemaError, match="more than 4300 digits") as caught:
        load_task({"user_prompt": "x", "verifiers": verifiers})
    assert caught.value.path == "$.verifiers"


def test_a_5000_digit_string_value_loads() -> None:
    verifier = {
        "verifier_type": "database_state",
        "validation_config": {"query": "SELECT 1", "expected_value": "9" * 5000},
    }
    assert load_task(
        {"user_prompt": "x", "verifiers": [verifier], "gym_servers_config": GYMS}
    ).verifiers


def test_lone_surrogate_escape_is_refused_but_a_pair_loads(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.json"
    path.write_text('{"user_prompt": "a\\ud800b"}')
    with pytest.raises(SchemaError, match="unpaired surrogate"):
        load_task(path)
    path.write_text(
        '{"user_prompt": "a\\ud83d\\ude00b", "gym_servers_config": ' + json.dumps(GYMS) + "}"
    )
    assert load_task(path).user_prompt == "a\U0001f600b"


def test_decode_json_reports_text_positions() -> None:
    with pytest.raises(SchemaError, match="line 2 column 1") as caught:
        decode_json('{"a": 1,\n}')
    assert caught.value.offset is None
    with pytest.raises(SchemaError, match="byte offset 10"):
        decode_json('{"\xe9": 1,\n}'.encode())
    assert nesting_depth([[1], {"a": [[]]}]) == 4
    assert nesting_depth(7) == 0


def eog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "content",
    [
        b'{"user_prompt": "\xff"}',
        DEEP.encode(),
        b'{"user_prompt": "x", "number_of_runs": ' + b"7" * 5000 + b"}",
    ],
    ids=["non-utf8", "deep", "huge-int"],
)
def test_cli_reports_a_hostile_task_file_in_one_line(tmp_path: Path, content: bytes) -> None:
    task = tmp_path / "task.json"
    task.write_bytes(content)
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(content + b"\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "t.json").write_text('{"gym_name": "g", "tools": []}')
    runs = {
        "verify": eog("verify", task, "--db", f"g={tmp_path / 'none.sqlite'}"),
        "convert": eog("convert", task, "--tools", tools, "-o", tmp_path / "out.jsonl"),
        "convert-rows": eog("convert", rows, "--tools", tools, "-o", tmp_path / "out.jsonl"),
        "validate": eog("validate", task),
        "validate-rows": eog("validate", rows),
    }
    for name, done in runs.items():
        assert "Traceback" not in done.stderr, (name, done.stderr)
        problems = [
            line for line in done.stderr.splitlines() if "SchemaError" in line or "invalid:" in line
        ]
        assert len(problems) == 1, (name, done.stderr)
        assert "task.json" in problems[0] or "rows.jsonl:1" in problems[0], (name, problems)
        expected = 1 if name.startswith("validate") else 3  # validate reports invalid tasks with 1
        assert done.returncode == expected, (name, done.returncode, done.stderr)
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_reports_a_non_utf8_tool_snapshot(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "t.json").write_bytes(b'{"gym_name": "\xfe"}')
    done = eog("convert", demo_paths().task, "--tools", tools, "-o", tmp_path / "out.jsonl")
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert (
        "not UTF-8: invalid byte 0xfe at byte offset 14" in done.stderr and "t.json" in done.stderr
    )
