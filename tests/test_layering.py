"""The import graph of ``src/eog_core``, read from the source (every import statement,
those inside functions and under ``TYPE_CHECKING`` included): no two modules import
each other (STYLE.md, "Layout")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import eog_core

SRC = Path(eog_core.__file__).parent

#: Cycles other engineers are cutting (issue #20, the gym and gateway packages).
KNOWN_CYCLES = frozenset({
    frozenset({"eog_core.gym._handle", "eog_core.gym._session"}),
    frozenset({"eog_core.gateway._control", "eog_core.gateway._gateway"}),
})


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = ("eog_core", *path.relative_to(SRC).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*head, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names
                        if f"{base}.{alias.name}" in modules)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = _modules()
    return {name: {m for m in _imported(name, path, modules) if m in modules and m != name}
            for name, path in modules.items()}


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "eog_core.tasks._schema" in graph["eog_core.tasks._convert"]
    assert "eog_core.local._thread" in graph["eog_core.local._server"]  # a relative import


def test_no_two_modules_import_each_other() -> None:
    graph = import_graph()
    cycles = {frozenset({a, b}) for a, imports in graph.items() for b in imports
              if a in graph[b]}
    assert not cycles - KNOWN_CYCLES
