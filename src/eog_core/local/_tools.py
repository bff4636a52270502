"""Tools of the local gym: registration, argument checking and result shaping.

A tool is a plain (sync or async) function ``fn(ctx, **arguments)`` plus the
JSON schema of its arguments. The registry checks arguments against that schema
(required properties, basic JSON types, enums, closed objects) before calling,
so tool bodies can trust their inputs, and turns return values into MCP
``tools/call`` results.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeAlias, TypeVar

import attrs

__all__ = [
    "RegisteredTool",
    "ToolContext",
    "ToolFunction",
    "ToolRegistry",
    "tool_result",
    "validate_arguments",
]

ToolFunction: TypeAlias = Callable[..., Any | Awaitable[Any]]
_F = TypeVar("_F", bound=ToolFunction)


@attrs.frozen(kw_only=True)
class ToolContext:
    """What a tool body may use: its database, the request headers and the database id."""

    connection: sqlite3.Connection
    database_id: str
    headers: Mapping[str, str]  # keys lower-cased
    tool_name: str

    def header(self, name: str, default: str | None = None) -> str | None:
        """One request header, looked up case-insensitively."""
        return self.headers.get(name.lower(), default)

    @property
    def user_email(self) -> str | None:
        """The acting user selected by the task's ``x-user-email`` context header."""
        return self.header("x-user-email")


@attrs.frozen(kw_only=True)
class RegisteredTool:
    """One registered tool: its MCP description and the function behind it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    function: ToolFunction
    title: str | None = None

    def describe(self) -> dict[str, Any]:
        """The entry of this tool in a ``tools/list`` answer."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if self.title is not None:
            entry["title"] = self.title
        return entry

    async def invoke(self, ctx: ToolContext, arguments: Mapping[str, Any]) -> Any:
        """Run the tool body, awaiting it if it is a coroutine function."""
        outcome = self.function(ctx, **arguments)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome


@attrs.define
class ToolRegistry:
    """An ordered set of tools, filled with the :meth:`tool` decorator."""

    _tools: dict[str, RegisteredTool] = attrs.field(factory=dict, init=False)

    def tool(
        self,
        *,
        name: str | None = None,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> Callable[[_F], _F]:
        """Register the decorated function as a tool; the function is returned unchanged."""

        def register(function: _F) -> _F:
            self.add(
                RegisteredTool(
                    name=name or function.__name__,
                    description=description or inspect.getdoc(function) or "",
                    input_schema=input_schema or {"type": "object", "properties": {}},
                    function=function,
                    title=title,
                )
            )
            return function

        return register

    def add(self, spec: RegisteredTool) -> None:
        """Register one tool; a second tool with the same name is refused."""
        if spec.name in self._tools:
            raise ValueError(f"tool {spec.name!r} is already registered")
        self._tools[spec.name] = spec

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def describe(self) -> list[dict[str, Any]]:
        return [spec.describe() for spec in self._tools.values()]

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
    ),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
    "null": lambda value: value is None,
}


def validate_arguments(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """Check ``value`` against a JSON schema subset; return one message per problem.

    Supported: ``type`` (name or list), ``enum``, ``required``, ``properties``,
    ``additionalProperties: false``, ``items``. Unknown keywords are ignored.
    """
    problems: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        known = [name for name in names if name in _JSON_TYPES]
        if known and not any(_JSON_TYPES[name](value) for name in known):
            problems.append(f"{path}: expected {' or '.join(known)}, got {_json_type(value)}")
            return problems
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        problems.append(f"{path}: {json.dumps(value)} is not one of {choices}")
    if isinstance(value, dict):
        problems.extend(_validate_object(schema, value, path))
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems.extend(validate_arguments(schema["items"], item, f"{path}[{index}]"))
    return problems


def _validate_object(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> list[str]:
    problems = [
        f"{path}.{key}: required property is missing"
        for key in schema.get("required", ())
        if key not in value
    ]
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key, item in value.items():
        if key in properties:
            problems.extend(validate_arguments(properties[key], item, f"{path}.{key}"))
        elif schema.get("additionalProperties") is False:
            problems.append(f"{path}.{key}: unexpected property")
    return problems


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def tool_result(value: Any, *, is_error: bool = False) -> dict[str, Any]:
    """Shape a tool's return value as an MCP ``tools/call`` result.

    A str becomes one text item; a dict becomes JSON text plus ``structuredContent``;
    a list (or scalar) becomes JSON text plus ``structuredContent: {"result": value}``
    because structured content must be an object; None gives no content.
    """
    result: dict[str, Any] = {"content": [], "isError": is_error}
    if value is None:
        return result
    if isinstance(value, str):
        result["content"] = [{"type": "text", "text": value}]
        return result
    text = json.dumps(value, ensure_ascii=False, default=str)
    result["content"] = [{"type": "text", "text": text}]
    result["structuredContent"] = value if isinstance(value, dict) else {"result": value}
    return result
