"""Tool snapshots of the gyms and a task's merged tool set.

Merging follows upstream: tools are taken gym by gym in the task's gym order,
the first tool of a name wins, then ``selected_tools`` filters (empty or null
means every tool) and ``restricted_tools`` removes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core._json import decode_json
from eog_core.errors import SchemaError
from eog_core.tasks._schema import Task

__all__ = [
    "ToolSet",
    "ToolSnapshot",
    "ToolSpec",
    "clean_schema",
    "load_tool_snapshots",
    "merge_tools",
    "raw_schema",
]

_DROPPED_SCHEMA_KEYS = frozenset({"$schema", "title", "$id"})


def _empty_object() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


def _members(value: Any) -> list[Any]:
    """The elements Python iteration yields for a JSON value (chars of a string, keys of an
    object); nothing for a number, boolean or null, where upstream's cleaner would crash."""
    return list(value) if isinstance(value, list | tuple | str | Mapping) else []


def _first_object_option(options: Any) -> dict[str, Any] | None:
    return next(
        (
            dict(option)
            for option in _members(options)
            if isinstance(option, Mapping) and option.get("type") == "object"
        ),
        None,
    )


def _merge_all_of(parts: Any) -> dict[str, Any]:
    merged = _empty_object()
    for part in _members(parts):
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("properties"), Mapping):
            merged["properties"].update(part["properties"])
        if "required" in part:
            merged["required"].extend(_members(part["required"]))
    return merged


def _is_null(type_name: Any) -> bool:
    return isinstance(type_name, str) and type_name.lower() == "null"


def _clean_property(prop: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """One property as upstream presents it, and whether a null type made it optional."""
    cleaned = dict(prop)
    optional = False
    if isinstance(cleaned.get("type"), list):
        types = cleaned["type"]
        concrete = [t for t in types if not _is_null(t)]
        cleaned["type"] = concrete[0] if concrete else "string"
        optional = not concrete or len(concrete) < len(types)  # an empty list too
    if cleaned.get("type") == "object" and "properties" in cleaned:
        cleaned = clean_schema(cleaned)
    if cleaned.get("type") == "array" and isinstance(cleaned.get("items"), Mapping):
        cleaned["items"] = clean_schema(cleaned["items"])
    return cleaned, optional


def clean_schema(schema: Any) -> dict[str, Any]:
    """A tool input schema exactly as upstream's LLM client shows it to the model.

    Rules (``benchmark/llm_client.py``, ``_clean_json_schema``): a non-object input
    becomes an empty object schema; a top-level ``oneOf`` is replaced by its first
    ``type: object`` option (none: empty object schema), then ``allOf`` by the merge of
    its parts' ``properties`` and ``required`` (everything else dropped), then ``anyOf``
    like ``oneOf``; a missing ``type`` becomes ``object`` and an object without
    ``properties`` gets an empty one. Each property whose ``type`` is a list takes its
    first non-null type (``string`` when every type is null) and, when a null type was
    listed, leaves ``required``; object properties with ``properties`` and dict
    ``items`` of arrays are cleaned the same way. Other keys (``title``,
    ``additionalProperties``, nested ``anyOf``) are kept. The input is never modified.
    Where upstream's cleaner would crash (a number where a list is expected, a
    non-string type name) the odd value counts as absent or as a concrete type.
    """
    if not isinstance(schema, Mapping):
        return _empty_object()
    cleaned = dict(schema)
    if "oneOf" in cleaned:
        option = _first_object_option(cleaned["oneOf"])
        if option is None:
            return _empty_object()
        cleaned = option
    if "allOf" in cleaned:
        cleaned = _merge_all_of(cleaned["allOf"])
    if "anyOf" in cleaned:
        option = _first_object_option(cleaned["anyOf"])
        if option is None:
            return _empty_object()
        cleaned = option
    cleaned.setdefault("type", "object")
    if cleaned["type"] == "object":
        cleaned.setdefault("properties", {})
    properties = cleaned.get("properties")
    if isinstance(properties, Mapping):
        optional: list[Any] = []
        cleaned_properties: dict[str, Any] = {}
        for name, prop in properties.items():
            if isinstance(prop, Mapping):
                prop, made_optional = _clean_property(prop)
                if made_optional:
                    optional.append(name)
            cleaned_properties[name] = prop
        cleaned["properties"] = cleaned_properties
        if optional and "required" in cleaned:
            required = cleaned["required"]
            if isinstance(required, list | tuple | str | Mapping):
                cleaned["required"] = [name for name in required if name not in optional]
    return cleaned


def raw_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The richer schema of the ``raw=True`` opt-in: the gym's own input schema with
    nullable types and combinators intact, only metadata keys (``$schema``, ``$id``,
    ``title``) dropped and ``type``/``properties`` defaulted to an object."""
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
    listed: Mapping[str, Any] | None = attrs.field(default=None, eq=False, hash=False, repr=False)
    """The ``tools/list`` entry as the gym gave it, every key in its order (upstream's
    ``planner_react`` shows the planner these); None for a tool not read from a listing."""

    @classmethod
    def from_mcp(
        cls,
        tool: Mapping[str, Any],
        *,
        gym: str | None = None,
        where: str = "$",
        source: str | None = None,
    ) -> ToolSpec:
        """Read a ``tools/list`` entry (``{name, description, inputSchema, ...}``)."""
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise SchemaError(
                "expected a tool object with a string name", path=where, source=source
            )
        # A tool without a schema gets the one upstream assumes for it.
        schema = tool.get("inputSchema", tool.get("parameters", _empty_object()))
        if not isinstance(schema, Mapping):
            raise SchemaError("expected an object", path=f"{where}.inputSchema", source=source)
        description = tool.get("description") or ""
        if not isinstance(description, str):
            raise SchemaError("expected a string", path=f"{where}.description", source=source)
        output = tool.get("outputSchema")
        return cls(
            name=tool["name"],
            description=description,
            input_schema=dict(schema),
            output_schema=dict(output) if isinstance(output, Mapping) else None,
            gym=gym,
            listed=dict(tool),
        )

    def parameters(self, *, raw: bool = False) -> dict[str, Any]:
        """The input schema shown to the model: upstream's cleaned schema (:func:`clean_schema`),
        or with ``raw=True`` the gym's richer schema (:func:`raw_schema`)."""
        return raw_schema(self.input_schema) if raw else clean_schema(self.input_schema)

    def to_responses_tool(self, *, raw: bool = False) -> dict[str, Any]:
        """The tool as an OpenAI Responses-API function tool, as upstream sends it (and as
        NeMo Gym rows carry it): cleaned parameters and ``strict: false``."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters(raw=raw),
            "strict": False,
        }

    def to_chat_tool(self, *, raw: bool = False) -> dict[str, Any]:
        """The tool as a Chat-Completions function tool, as upstream sends it (no ``strict``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters(raw=raw),
            },
        }


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
    _by_name: dict[str, ToolSpec] | None = attrs.field(
        default=None, init=False, eq=False, repr=False, hash=False
    )

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name`` (the first, if two share it), or None."""
        index = self._by_name
        if index is None:  # built on first use: the set is immutable
            index = {}
            for tool in self.tools:
                index.setdefault(tool.name, tool)
            object.__setattr__(self, "_by_name", index)
        return index.get(name)

    def owner(self, name: str) -> str | None:
        """The gym that serves tool ``name``, or None when it is not in the set."""
        tool = self.get(name)
        return tool.gym if tool else None

    def responses_tools(self, *, raw: bool = False) -> list[dict[str, Any]]:
        """Every tool for the Responses API (see :meth:`ToolSpec.to_responses_tool`)."""
        return [tool.to_responses_tool(raw=raw) for tool in self.tools]

    def chat_tools(self, *, raw: bool = False) -> list[dict[str, Any]]:
        """Every tool for Chat Completions (see :meth:`ToolSpec.to_chat_tool`)."""
        return [tool.to_chat_tool(raw=raw) for tool in self.tools]


def _read_snapshot(path: Path) -> ToolSnapshot:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SchemaError(f"cannot read tool snapshot: {exc}", source=str(path)) from exc
    data = decode_json(raw, source=str(path))
    if not isinstance(data, dict) or not isinstance(data.get("gym_name"), str):
        raise SchemaError("expected an object with a string gym_name", source=str(path))
    tools = data.get("tools")
    if not isinstance(tools, list):
        raise SchemaError("expected an array", path="$.tools", source=str(path))
    gym = data["gym_name"]
    return ToolSnapshot(
        gym_name=gym,
        gym_url=data.get("gym_url"),
        snapshot_at=data.get("snapshot_at"),
        tools=tuple(
            ToolSpec.from_mcp(t, gym=gym, where=f"$.tools[{i}]", source=str(path))
            for i, t in enumerate(tools)
        ),
    )


def load_tool_snapshots(
    source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> dict[str, ToolSnapshot]:
    """Load tool snapshots from a directory of ``*.json`` files (or a list of files), by gym name.

    Two snapshots of one ``gym_name`` raise :class:`SchemaError` naming both files.
    """
    if isinstance(source, str | os.PathLike):
        root = Path(source)
        paths = sorted(root.glob("*.json")) if root.is_dir() else [root]
        if not paths:
            raise SchemaError("no tool snapshot files (*.json) in directory", source=str(root))
    else:
        paths = [Path(p) for p in source]
    by_gym: dict[str, ToolSnapshot] = {}
    first_file: dict[str, Path] = {}
    for path in paths:
        snapshot = _read_snapshot(path)
        if snapshot.gym_name in by_gym:  # which one is meant cannot be guessed
            raise SchemaError(
                f"a second tool snapshot of gym {snapshot.gym_name!r} "
                f"(first in {first_file[snapshot.gym_name]})",
                path="$.gym_name",
                source=str(path),
            )
        by_gym[snapshot.gym_name] = snapshot
        first_file[snapshot.gym_name] = path
    return by_gym


def merge_tools(
    task: Task, tools_by_gym: Mapping[str, ToolSnapshot | Sequence[ToolSpec | Mapping[str, Any]]]
) -> ToolSet:
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
