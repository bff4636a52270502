"""The import graph of ``src/eog_core``, read from the source (every import statement,
those inside functions and under ``TYPE_CHECKING`` included): no two modules import
each other (STYLE.md, "Layout")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import eog_core

SRC = Path(eog_core.__file__).parent


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
            submodules = [
                f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules
            ]
            if len(submodules) < len(node.names):  # ``from pkg import _a, _b`` needs only those
                yield base
            yield from submodules


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = _modules()
    return {
        name: {m for m in _imported(name, path, modules) if m in modules and m != name}
        for name, path in modules.items()
    }


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "eog_core.tasks._schema" in graph["eog_core.tasks._convert"]
    assert "eog_core.local._thread" in graph["eog_core.local._server"]  # a relative import
    assert "eog_core.cli._demo" in graph["eog_core.cli._main"]  # from a package, a submodule
    assert "eog_core.cli" not in graph["eog_core.cli._main"]


def test_no_two_modules_import_each_other() -> None:
    graph = import_graph()
    cycles = {frozenset({a, b}) for a, imports in graph.items() for b in imports if a in graph[b]}
    assert not cycles


def _package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _is_private(module: str) -> bool:
    """``eog_core.<package>._x`` (or deeper) is private to ``<package>``; ``eog_core._json``
    and the like are the neutral modules every package may use."""
    return any(part.startswith("_") for part in module.split(".")[2:])


def test_no_package_imports_another_packages_private_module() -> None:
    crossings = {
        (a, b)
        for a, imports in import_graph().items()
        for b in imports
        if _is_private(b) and _package_of(a) != _package_of(b)
    }
    assert not crossings


def test_the_core_never_imports_the_integrations() -> None:
    """pyproject.toml: the adapters (``eog_core.integrations.*``) build on the core, not back."""
    leaks = {
        (a, b)
        for a, imports in import_graph().items()
        for b in imports
        if b.startswith("eog_core.integrations") and not a.startswith("eog_core.integrations")
    }
    assert not leaks


def test_private_means_inside_a_package() -> None:
    assert _is_private("eog_core.metrics._grid") and not _is_private("eog_core._json")
    assert not _is_private("eog_core.local.demo")
    assert _package_of("eog_core.report._render") != _package_of("eog_core.metrics._grid")


def test_state_sits_on_gym_and_nothing_below_imports_it() -> None:
    """``eog_core.state`` (snapshots) uses ``gym`` and what ``gym`` uses; the packages below
    never import it (so ``TaskSession`` has no ``snapshot`` method: ``state.snapshot(session)``)."""
    graph = import_graph()
    below = ("tasks", "verify", "gym", "local", "errors", "_")
    upward = {
        (a, b)
        for a, imports in graph.items()
        for b in imports
        if b.startswith("eog_core.state") and a.split(".")[1].startswith(below)
    }
    assert not upward
    allowed = ("eog_core.state", "eog_core.gym", "eog_core.verify", "eog_core.tasks")
    state_imports = {
        b
        for a, imports in graph.items()
        if a.startswith("eog_core.state")
        for b in imports
        if not b.startswith(allowed) and b.split(".")[1] not in ("errors", "_json", "_plumbing")
    }
    assert not state_imports
