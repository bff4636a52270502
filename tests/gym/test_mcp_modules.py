"""The MCP client's modules stay small and depend downward only (issue #20's split)."""

from __future__ import annotations

import ast
from pathlib import Path

import eog_core.gym

GYM = Path(eog_core.gym.__file__).parent
MCP_MODULES = [
    "_jsonrpc.py",
    "_mcp.py",
    "_mcp_ending.py",
    "_mcp_handshake.py",
    "_mcp_headers.py",
    "_mcp_stream.py",
]
# Lower first: a module may import only those before it.
ORDER = ["_jsonrpc", "_mcp_ending", "_mcp_handshake", "_mcp_headers", "_mcp_stream", "_mcp"]


def _gym_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        module = node.module if isinstance(node, ast.ImportFrom) else None
        if module is not None and module.startswith("eog_core.gym."):
            found.add(module.rsplit(".", 1)[1])
    return found


#: Lines a module may have: the project's ceiling (STYLE.md aims at 400); issue #29 split
#: ``_mcp.py`` (462 lines) into it, the headers and the ending.
MAX_LINES = 440


def test_every_mcp_module_is_under_its_line_ceiling() -> None:
    sizes = {
        name: len((GYM / name).read_text(encoding="utf-8").splitlines()) for name in MCP_MODULES
    }
    assert {name: size for name, size in sizes.items() if size > MAX_LINES} == {}


def test_mcp_modules_import_only_lower_ones() -> None:
    upward = {}
    for rank, module in enumerate(ORDER):
        higher = set(ORDER[rank:]) & _gym_imports(GYM / f"{module}.py")
        if higher:
            upward[module] = sorted(higher)
    assert upward == {}
