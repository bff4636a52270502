"""Run upstream's tool-schema cleaner and write tests/golden/tool_schemas.json.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_tool_schemas.py

Inputs: every tool of the tool snapshots (``EOG_DATA_DIR/tools``, default
``../shared/eog-data``), turned into the tool definitions upstream's LLM client
binds (Chat Completions, and the Responses API with ``strict: false``), and a
few hundred schemas mutated with a fixed seed (top-level combinators, nested
objects, nullable and all-null type arrays, non-object inputs). Where upstream's
cleaner raises, the case records the exception type instead of an output.
Upstream is imported from its folder and run as is; nothing of it is copied.
"""

from __future__ import annotations

import copy
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

SEED = 13
MUTATED = 400
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
OUT = HERE.parent / "tool_schemas.json"
DATA = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))


def upstream_client_class() -> Any:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder or not (Path(folder) / "benchmark" / "llm_client.py").is_file():
        sys.exit(
            "set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym "
            "(the folder holding benchmark/llm_client.py)"
        )
    sys.path.insert(0, folder)
    from benchmark.llm_client import LLMClient  # the cleaner needs no LangChain import

    return LLMClient


def make_client(cls: Any, *, responses: bool) -> Any:
    """An LLMClient without a LangChain model: only its tool conversion is used."""
    client = cls.__new__(cls)
    client.provider = "openai"
    client.use_responses_api = responses
    return client


def responses_form(tool_def: dict[str, Any]) -> dict[str, Any]:
    """LangChain's Responses payload turns ``{"type", "function": {...}}`` into a flat tool."""
    return {"type": "function", **tool_def["function"]}


def real_tools(chat: Any, responses: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cases, schemas = [], []
    for path in sorted((DATA / "tools").glob("*.json")):
        snapshot = json.loads(path.read_text(encoding="utf-8"))
        for tool in snapshot["tools"]:
            mcp_tool = {k: tool[k] for k in ("name", "description", "inputSchema") if k in tool}
            chat_def = chat._convert_mcp_tools_to_langchain([copy.deepcopy(mcp_tool)])[0]
            resp_def = responses._convert_mcp_tools_to_langchain([copy.deepcopy(mcp_tool)])[0]
            flat = responses_form(resp_def)
            assert flat == {**responses_form(chat_def), "strict": False}, tool["name"]
            assert json.dumps(list(flat)) == json.dumps(
                ["type", "name", "description", "parameters", "strict"]
            ), tool["name"]
            cases.append({"gym": snapshot["gym_name"], "tool": mcp_tool, "chat": chat_def})
            schemas.append(tool.get("inputSchema", {}))
    return cases, schemas


HAND_WRITTEN: list[Any] = [
    None,
    [],
    "object",
    5,
    True,
    {},
    {"type": "object"},
    {"properties": {"a": {"type": "string"}}},
    {"type": "string"},
    {
        "type": ["object", "null"],
        "properties": {"a": {"type": ["string", "null"]}},
        "required": ["a"],
    },
    {
        "oneOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "integer"}}}],
        "description": "parent dropped",
    },
    {"oneOf": [{"type": "string"}, {"type": "null"}]},
    {"oneOf": []},
    {"oneOf": "object"},
    {"oneOf": {"type": "object"}},
    {"anyOf": [{"properties": {"a": {}}}, {"type": "object", "required": ["b"]}]},
    {"anyOf": [{"type": "null"}]},
    {
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": ["integer", "null"]}}, "required": ["b"]},
            "junk",
        ],
        "properties": {"dropped": {"type": "string"}},
        "title": "dropped too",
    },
    {"allOf": [{"required": "ab"}, {"properties": {"a": {"type": "string"}}}]},
    {"allOf": "x"},
    {
        "oneOf": [
            {
                "type": "object",
                "allOf": [{"properties": {"a": {"type": "string"}}}],
                "anyOf": [{"type": "object"}],
            }
        ]
    },
    {"allOf": [{"properties": {"a": {"type": "string"}}}], "anyOf": [{"type": "string"}]},
    {
        "type": "object",
        "properties": {
            "a": {"type": ["null"]},
            "b": {"type": []},
            "c": {"type": ["NULL", "STRING"]},
            "d": {"type": ["null", "null"]},
        },
        "required": ["a", "b", "c", "d", "e"],
    },
    {"type": "object", "properties": {"a": {"type": ["integer", "string"]}}, "required": ["a"]},
    {
        "type": "object",
        "properties": {"a": True, "b": None, "c": "string", "d": {"type": ["string", "null"]}},
        "required": "abcd",
    },
    {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}},
        "required": {"a": 1, "b": 2},
    },
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
    {
        "type": "object",
        "properties": {
            "n": {
                "type": "object",
                "properties": {"m": {"type": ["string", "null"]}},
                "required": ["m"],
                "oneOf": [{"type": "object", "properties": {}}],
            }
        },
    },
    {"type": "object", "properties": {"n": {"type": "object", "oneOf": [{"type": "string"}]}}},
    {
        "type": "object",
        "properties": {
            "n": {
                "type": ["object", "null"],
                "properties": {
                    "deep": {
                        "type": "object",
                        "properties": {"z": {"type": ["null", "boolean"]}},
                        "required": ["z"],
                    }
                },
            }
        },
    },
    {
        "type": "object",
        "properties": {"n": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
    },
    {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"q": {"type": ["string", "null"]}},
                    "required": ["q"],
                },
            }
        },
    },
    {"type": "object", "properties": {"l": {"type": "array", "items": {}}}},
    {
        "type": "object",
        "properties": {"l": {"type": "array", "items": {"anyOf": [{"type": "string"}]}}},
    },
    {"type": "object", "properties": {"l": {"type": "array", "items": [{"type": "string"}]}}},
    {
        "type": "object",
        "properties": {"l": {"type": ["array", "null"], "items": {"type": ["string", "null"]}}},
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "T",
        "$id": "x",
        "type": "object",
        "additionalProperties": False,
        "properties": {},
    },
    # inputs upstream's cleaner cannot take: recorded as its exception
    {"oneOf": 5},
    {"allOf": [{"required": 3}]},
    {"type": "object", "properties": []},
    {"type": "object", "properties": {"a": {"type": [1, "null"]}}},
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": 7},
]


def mutate(rng: random.Random, schema: Any, depth: int = 0) -> Any:
    """One random rewrite of a schema, of the kinds the cleaner treats specially."""
    schema = copy.deepcopy(schema)
    props = schema.get("properties") if isinstance(schema, dict) else None
    names = list(props) if isinstance(props, dict) else []
    kind = rng.choice(
        [
            "nullable",
            "all_null",
            "one_of",
            "any_of",
            "all_of",
            "nested",
            "items",
            "drop_type",
            "drop_properties",
            "odd_required",
            "odd_props",
            "uppercase",
        ]
    )
    if kind in ("nullable", "all_null", "uppercase") and names:
        for name in rng.sample(names, k=rng.randint(1, len(names))):
            base = props[name].get("type", "string") if isinstance(props[name], dict) else "string"
            base = base if isinstance(base, str) else "string"
            if not isinstance(props[name], dict):
                continue
            props[name]["type"] = (
                ["null"] * rng.randint(0, 2)
                if kind == "all_null"
                else [base.upper(), "NULL"]
                if kind == "uppercase"
                else rng.choice([[base, "null"], ["null", base], [base, "null", "integer"]])
            )
            if rng.random() < 0.7:
                if not isinstance(schema.get("required"), list):
                    schema["required"] = []
                schema["required"].append(name)
    elif kind in ("one_of", "any_of"):
        key = "oneOf" if kind == "one_of" else "anyOf"
        options: list[Any] = [{"type": "string"}, {"type": "null"}, "junk"]
        rng.shuffle(options)
        if rng.random() < 0.85:
            options.insert(rng.randint(0, len(options)), schema)
        schema = {key: options, "description": "wrapper"}
    elif kind == "all_of" and names:
        parts: list[dict[str, Any]] = [
            {"properties": {}, "required": []} for _ in range(rng.randint(1, 3))
        ]
        for name in names:
            part = rng.choice(parts)
            part["properties"][name] = props[name]
            if name in (schema.get("required") or []):
                part["required"].append(name)
        schema = {"type": "object", "allOf": parts, "properties": {"lost": {"type": "string"}}}
    elif kind == "nested" and names and depth < 2:
        inner = {
            "type": rng.choice(["object", ["object", "null"]]),
            "properties": {
                n: props.pop(n) for n in rng.sample(names, k=rng.randint(1, len(names)))
            },
        }
        props["nested"] = mutate(rng, inner, depth + 1) if rng.random() < 0.6 else inner
    elif kind == "items" and names and depth < 2:
        item = {"type": "object", "properties": {n: copy.deepcopy(props[n]) for n in names[:3]}}
        props["many"] = {
            "type": rng.choice(["array", ["array", "null"]]),
            "items": mutate(rng, item, depth + 1) if rng.random() < 0.6 else item,
        }
    elif kind == "drop_type":
        schema.pop("type", None)
    elif kind == "drop_properties":
        schema.pop("properties", None)
    elif kind == "odd_required" and names:
        schema["required"] = rng.choice(
            ["".join(names[:2]), dict.fromkeys(names[:2], True), [*names, "ghost"]]
        )
    elif kind == "odd_props" and names:
        props[rng.choice(names)] = rng.choice([True, False, None, "string", 3])
    return schema


def run_cleaner(clean: Any, schema: Any) -> dict[str, Any]:
    try:
        return {"expected": clean(copy.deepcopy(schema))}
    except Exception as exc:  # upstream crashes on some inputs: record which
        return {"upstream_error": type(exc).__name__}


def main() -> None:
    client_class = upstream_client_class()
    chat, responses = (
        make_client(client_class, responses=False),
        make_client(client_class, responses=True),
    )
    tools, real_schemas = real_tools(chat, responses)
    if len(tools) != 512:
        sys.exit(
            f"expected the 512 tools of the 7 snapshots in {DATA / 'tools'}, found {len(tools)}"
        )
    rng = random.Random(SEED)
    schemas: list[dict[str, Any]] = [
        {"id": f"hand-{i}", "input": s, **run_cleaner(chat._clean_json_schema, s)}
        for i, s in enumerate(HAND_WRITTEN)
    ]
    for i in range(MUTATED):
        schema = rng.choice(real_schemas)
        for _ in range(rng.randint(1, 3)):
            schema = mutate(rng, schema)
        schemas.append(
            {"id": f"mutated-{i}", "input": schema, **run_cleaner(chat._clean_json_schema, schema)}
        )
    golden = {
        "generator": "tests/golden/generators/gen_tool_schemas.py",
        "seed": SEED,
        "upstream": "ServiceNow/EnterpriseOps-Gym benchmark/llm_client.py",
        "tools": tools,
        "schemas": schemas,
    }
    OUT.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    errors = sum("upstream_error" in s for s in schemas)
    print(f"wrote {OUT}: {len(tools)} tools, {len(schemas)} schemas ({errors} upstream errors)")


if __name__ == "__main__":
    main()
