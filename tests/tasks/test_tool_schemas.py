"""Tools are shown to the model exactly as upstream's LLM client shows them.

Replays tests/golden/tool_schemas.json (written by
tests/golden/generators/gen_tool_schemas.py from upstream's own cleaner);
``EOG_TOOL_SCHEMAS_GOLDEN_FILE`` names another file of the same format.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core import clean_schema
from eog_core.tasks import ToolSet, ToolSpec, load_tool_snapshots, raw_schema

GOLDEN_PATH = Path(
    os.environ.get("EOG_TOOL_SCHEMAS_GOLDEN_FILE")
    or Path(__file__).parent.parent / "golden" / "tool_schemas.json"
)
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
OVERRIDDEN = "EOG_TOOL_SCHEMAS_GOLDEN_FILE" in os.environ


def shown(value: Any) -> str:
    """What goes over the wire: key order counts."""
    return json.dumps(value)


def test_golden_covers_every_real_tool_and_the_mutations() -> None:
    assert len(GOLDEN["tools"]) == 512 or OVERRIDDEN
    assert len(GOLDEN["schemas"]) >= 400 or OVERRIDDEN
    assert sum("upstream_error" in case for case in GOLDEN["schemas"]) >= 1 or OVERRIDDEN


def test_clean_schema_matches_upstream() -> None:
    wrong = [
        case["id"]
        for case in GOLDEN["schemas"]
        if "expected" in case and shown(clean_schema(case["input"])) != shown(case["expected"])
    ]
    assert wrong == []


def test_schemas_upstream_cannot_clean_still_give_an_object_schema() -> None:
    for case in (c for c in GOLDEN["schemas"] if "upstream_error" in c):
        cleaned = clean_schema(case["input"])
        assert cleaned["type"] == "object", case["id"]


def test_clean_schema_never_changes_its_input() -> None:
    for case in GOLDEN["schemas"]:
        before = copy.deepcopy(case["input"])
        clean_schema(case["input"])
        assert case["input"] == before, case["id"]


def test_tools_are_presented_as_upstream_binds_them() -> None:
    wrong = []
    for case in GOLDEN["tools"]:
        tool = ToolSpec.from_mcp(case["tool"], gym=case["gym"])
        responses = {"type": "function", **case["chat"]["function"], "strict": False}
        if shown(tool.to_chat_tool()) != shown(case["chat"]):
            wrong.append(f"chat {tool.name}")
        if shown(tool.to_responses_tool()) != shown(responses):
            wrong.append(f"responses {tool.name}")
    assert wrong == []
    tools = ToolSet(tools=tuple(ToolSpec.from_mcp(case["tool"]) for case in GOLDEN["tools"]))
    assert [shown(t) for t in tools.chat_tools()] == [
        shown(case["chat"]) for case in GOLDEN["tools"]
    ]


def test_the_golden_tools_are_the_shared_snapshots(eog_data: Path) -> None:
    """The fixture embeds the real tools; it must be regenerated when the snapshots change."""
    snapshots = load_tool_snapshots(eog_data / "tools")
    current = {
        (gym, t.name): (t.description, dict(t.input_schema))
        for gym, snap in snapshots.items()
        for t in snap.tools
    }
    embedded = {
        (c["gym"], c["tool"]["name"]): (
            c["tool"].get("description") or "",
            c["tool"]["inputSchema"],
        )
        for c in GOLDEN["tools"]
    }
    assert embedded == current


NULLABLE = {
    "type": "object",
    "title": "Args",
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "properties": {"note": {"type": ["string", "null"]}, "id": {"type": "integer"}},
    "required": ["note", "id"],
}


def test_raw_opt_in_keeps_nullable_types() -> None:
    tool = ToolSpec.from_mcp({"name": "t", "description": "d", "inputSchema": NULLABLE})
    assert tool.to_responses_tool()["parameters"] == {
        "type": "object",
        "title": "Args",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {"note": {"type": "string"}, "id": {"type": "integer"}},
        "required": ["id"],
    }
    raw = tool.to_responses_tool(raw=True)
    assert raw["parameters"] == {
        "type": "object",
        "properties": NULLABLE["properties"],
        "required": ["note", "id"],
    }
    assert raw["strict"] is False
    assert tool.to_chat_tool(raw=True)["function"]["parameters"] == raw_schema(NULLABLE)
    assert "strict" not in tool.to_chat_tool()["function"]
    tools = ToolSet(tools=(tool,))
    assert tools.responses_tools(raw=True) == [raw]
    assert tools.chat_tools(raw=True) == [tool.to_chat_tool(raw=True)]


def test_a_tool_without_a_schema_gets_upstreams_default() -> None:
    tool = ToolSpec.from_mcp({"name": "bare"})
    assert tool.to_chat_tool() == {
        "type": "function",
        "function": {
            "name": "bare",
            "description": "",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    }


@pytest.mark.parametrize("schema", [None, [], "object", 5])
def test_non_object_schemas_become_an_empty_object(schema: Any) -> None:
    assert clean_schema(schema) == {"type": "object", "properties": {}, "required": []}


def test_nemo_rows_offer_the_upstream_presentation(eog_data: Path) -> None:
    """NeMo Gym rows carry what the model is shown: our cleaned tools, key order included."""
    from eog_core.tasks import load_task, merge_tools

    snapshots = load_tool_snapshots(eog_data / "tools")
    compared = raw_differs = 0
    for name in ("csm_revised.jsonl", "itsm_revised.jsonl", "hybrid_synthetic.jsonl"):
        for line in (eog_data / "nemo-rows" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            tools = merge_tools(load_task(row), snapshots)
            offered = row["responses_create_params"]["tools"]
            assert [shown(t) for t in tools.responses_tools()] == [shown(t) for t in offered]
            compared += len(offered)
            raw_differs += tools.responses_tools(raw=True) != offered
    assert compared >= 150
    assert raw_differs >= 1  # the rows were built from cleaned schemas, not raw ones
