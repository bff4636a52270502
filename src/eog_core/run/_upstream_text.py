"""Reading texts out of an upstream Python file without running it: :class:`Text`.

Upstream's orchestrators build their prompts with f-strings and string literals. A
:class:`Text` holds one such expression as ``ast`` parsed it and renders it the way Python
would, with only what the expression itself says: literals, f-string parts (with their
conversions and format specs), ``a if b else c``, lists, and ``name.get(key[, default])`` on a
mapping the caller hands in. Every other sub-expression (``self.subtask.title``,
``json.dumps(data, indent=2)``...) is a *slot*, named by its source text, whose value the
caller supplies; :meth:`Text.slots` lists them so a loader can refuse a file whose
expressions it does not know, before any rollout runs.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Text", "find_function", "first_assigned", "list_appends"]


@attrs.frozen(eq=False)
class Text:
    """One upstream expression; ``render(values)`` evaluates it (``values``: slot -> value)."""

    node: ast.expr

    def slots(self) -> frozenset[str]:
        return frozenset(_slots(self.node))

    def render(self, values: Mapping[str, Any]) -> Any:
        return _render(self.node, values)

    def literal(self) -> str | None:
        """The plain string this is, or None when it is not one."""
        if isinstance(self.node, ast.Constant) and isinstance(self.node.value, str):
            return self.node.value
        return None


def _is_get(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and not node.keywords
        and 1 <= len(node.args) <= 2
        and all(isinstance(arg, ast.Constant) for arg in node.args)
    )


def _slots(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant):
        return []
    if isinstance(node, ast.JoinedStr):
        return [slot for value in node.values for slot in _slots(value)]
    if isinstance(node, ast.FormattedValue):
        spec = _slots(node.format_spec) if node.format_spec is not None else []
        return _slots(node.value) + spec
    if isinstance(node, ast.IfExp):
        return _slots(node.test) + _slots(node.body) + _slots(node.orelse)
    if isinstance(node, ast.List):
        return [slot for element in node.elts for slot in _slots(element)]
    if _is_get(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        return _slots(node.func.value)
    return [ast.unparse(node)]


def _render(node: ast.expr, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_render(value, values)) for value in node.values)
    if isinstance(node, ast.FormattedValue):
        value = _render(node.value, values)
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("s"):
            value = str(value)
        elif node.conversion == ord("a"):
            value = ascii(value)
        spec = "" if node.format_spec is None else str(_render(node.format_spec, values))
        return format(value, spec)
    if isinstance(node, ast.IfExp):
        branch = node.body if _render(node.test, values) else node.orelse
        return _render(branch, values)
    if isinstance(node, ast.List):
        return [_render(element, values) for element in node.elts]
    if _is_get(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        mapping = _render(node.func.value, values)
        arguments = [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
        return mapping.get(*arguments)
    return values[ast.unparse(node)]


def find_function(
    tree: ast.Module, class_name: str, name: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``class_name.name`` of the module, or None."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    return item
    return None


def first_assigned(function: ast.AST, name: str) -> ast.expr | None:
    """The value first assigned to the local ``name`` in ``function``, or None."""
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
        ):
            return node.value
    return None


def list_appends(function: ast.AST, name: str) -> list[ast.expr]:
    """The arguments of every ``name.append(x)`` in ``function``, in source order."""
    found = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == name
        and len(node.args) == 1
    ]
    found.sort(key=lambda call: (call.lineno, call.col_offset))
    return [call.args[0] for call in found]
