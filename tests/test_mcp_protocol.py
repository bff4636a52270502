"""The MCP revisions are defined once, for the client and the servers alike."""

from __future__ import annotations

import ast
from pathlib import Path

import eog_core
from eog_core import _mcp_protocol, _mcp_server, gym, local

SOURCE = Path(eog_core.__file__).parent


def test_client_and_servers_share_one_tuple_of_versions() -> None:
    assert gym.SUPPORTED_PROTOCOL_VERSIONS is _mcp_protocol.SUPPORTED_PROTOCOL_VERSIONS
    assert _mcp_server.SUPPORTED_PROTOCOL_VERSIONS is _mcp_protocol.SUPPORTED_PROTOCOL_VERSIONS
    assert local.SUPPORTED_PROTOCOL_VERSIONS is _mcp_protocol.SUPPORTED_PROTOCOL_VERSIONS
    assert _mcp_protocol.SUPPORTED_PROTOCOL_VERSIONS[-1] == local.LATEST_PROTOCOL_VERSION


def test_no_other_module_assigns_the_versions() -> None:
    """A second definition, even an equal one, would drift when a revision is added."""
    assigning = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else ([node.target] if isinstance(node, ast.AnnAssign) else [])
            )
            if any(
                isinstance(t, ast.Name) and t.id == "SUPPORTED_PROTOCOL_VERSIONS" for t in targets
            ):
                assigning.append(path.relative_to(SOURCE).as_posix())
    assert assigning == ["_mcp_protocol.py"]
