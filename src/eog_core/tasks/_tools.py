"""Tool snapshots of the gyms and a task's merged tool set.

Merging follows upstream: tools are taken gym by gym in the task's gym order,
the first tool of a name wins, then ``selected_tools`` filters (empty or null
means every tool) and ``restricted_tools`` removes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import SchemaError
from eog_core.tasks._schema import Task

__all__ = [
    "ToolSet",
    "ToolSnapshot",
    "ToolSpec",
    "clean_schema",
    "load_tool_snapshots",
    "merge_tools",
]

_DROPPED_SCHEMA_KEYS = frozenset({"$schema", "title", "$id"})


def clean_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool input schema fit for a model API: an object schema without metadata keys."""
    cleaned = {k: v for k, v in (schema or {}).items() if k not in _DROPPED_SCHEMA_KEYS}
    cleaned.setdefault("type", "object")
    if cleaned["type"] == "object":
        cleaned.setdefault("properties", {})
    return cleaned


@attrs.frozen(kw_only=True)
class ToolSpec:
    """One MCP tool as a gym lists it, with the gym that owns it."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=dict)
    output_schema: Mapping[str, Any] | None = None
    gym: str | None = None

    @classmethod
    def from_mcp(cls, tool: Mapping[str, Any], *, gym: str | None = None,
                 where: str = "$", source: str | None = None) -> ToolSpec:
        """Read a ``tools/list`` entry (``{name, description, inputSchema, ...}``)."""
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise SchemaError("expected a tool object with a string name", path=where, source=source)
        schema = tool.get("inputSchema", tool.get("parameters", {}))
        if not isinstance(schema, Mapping):
            raise SchemaError("expected an object", path=f"{where}.inputSchema", source=source)
        description = tool.get("description") or ""
        if not isinstance(description, str):
            raise SchemaError("expected a string", path=f"{where}.description", source=source)
        output = tool.get("outputSchema")
        return cls(name=tool["name"], description=description, input_schema=dict(schema),
                   output_schema=dict(output) if isinstance(output, Mapping) else None, gym=gym)

    def to_responses_tool(self) -> dict[str, Any]:
        """The tool as an OpenAI Responses-API function tool (as NeMo Gym rows carry it)."""
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": clean_schema(self.input_schema), "strict": False}

    def to_chat_tool(self) -> dict[str, Any]:
        """The tool as a Chat-Completions function tool."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": clean_schema(self.input_schema)}}


@attrs.frozen(kw_only=True)
class ToolSnapshot:
    """The tools one gym listed at one moment (``eog-data/tools/<gym>.json``)."""

    gym_name: str
    gym_url: str | None = None
    snapshot_at: str | None = None
    tools: tuple[ToolSpec, ...] = ()


@attrs.frozen(kw_only=True)
class ToolSet:
    """A task's tools after merging, filtering and restriction."""

    tools: tuple[ToolSpec, ...]
    missing: tuple[str, ...] = ()
    """Selected tool names that no gym of the task offers."""

    def __contains__(self, name: object) -> bool:
        return any(tool.name == name for tool in self.tools)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def get(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def owner(self, name: str) -> str | None:
        """The gym that serves tool ``name``, or None when it is not in the set."""
        tool = self.get(name)
        return tool.gym if tool else None

    def responses_tools(self) -> list[dict[str, Any]]:
        return [tool.to_responses_tool() for tool in self.tools]

    def chat_tools(self) -> list[dict[str, Any]]:
        return [tool.to_chat_tool() for tool in self.tools]


def _read_snapshot(path: Path) -> ToolSnapshot:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaError(f"cannot read tool snapshot: {exc}", source=str(path)) from exc
    if not isinstance(data, dict) or not isinstance(data.get("gym_name"), str):
        raise SchemaError("expected an object with a string gym_name", source=str(path))
    tools = data.get("tools")
    if not isinstance(tools, list):
        raise SchemaError("expected an array", path="$.tools", source=str(path))
    gym = data["gym_name"]
    return ToolSnapshot(
        gym_name=gym, gym_url=data.get("gym_url"), snapshot_at=data.get("snapshot_at"),
        tools=tuple(ToolSpec.from_mcp(t, gym=gym, where=f"$.tools[{i}]", source=str(path))
                    for i, t in enumerate(tools)))


def load_tool_snapshots(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> dict[str, ToolSnapshot]:
    """Load tool snapshots from a directory of ``*.json`` files (or a list of files), by gym name."""
    if isinstance(source, str | os.PathLike):
        root = Path(source)
        paths = sorted(root.glob("*.json")) if root.is_dir() else [root]
        if not paths:
            raise SchemaError("no tool snapshot files (*.json) in directory", source=str(root))
    else:
        paths = [Path(p) for p in source]
    snapshots = [_read_snapshot(path) for path in paths]
    return {snap.gym_name: snap for snap in snapshots}


def merge_tools(task: Task, tools_by_gym: Mapping[str, ToolSnapshot | Sequence[ToolSpec | Mapping[str, Any]]]) -> ToolSet:
    """The task's tool set: gym order, first duplicate wins, then selected, then restricted."""
    merged: dict[str, ToolSpec] = {}
    for gym in task.gym_servers:
        listed = tools_by_gym.get(gym.name, ())
        items = listed.tools if isinstance(listed, ToolSnapshot) else listed
        for item in items:
            tool = item if isinstance(item, ToolSpec) else ToolSpec.from_mcp(item, gym=gym.name)
            if tool.gym != gym.name:
                tool = attrs.evolve(tool, gym=gym.name)
            merged.setdefault(tool.name, tool)
    tools = list(merged.values())
    missing: tuple[str, ...] = ()
    if task.selected_tools:
        selected = set(task.selected_tools)
        tools = [t for t in tools if t.name in selected]
        missing = tuple(name for name in dict.fromkeys(task.selected_tools) if name not in merged)
    if task.restricted_tools:
        restricted = set(task.restricted_tools)
        tools = [t for t in tools if t.name not in restricted]
    return ToolSet(tools=tuple(tools), missing=missing)
