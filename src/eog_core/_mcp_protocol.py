"""MCP protocol facts both sides of the wire share: the revisions spoken and the header names.

The gym client (:mod:`eog_core.gym`) and the servers (:mod:`eog_core._mcp_server`,
used by the local gym and the gateway) import them from here, so that a new
revision is added once.
"""

from __future__ import annotations

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "PROTOCOL_HEADER",
    "SESSION_HEADER",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "VERSION_HEADER_FROM",
]

SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP revisions eog_core speaks, oldest first (the EOG containers answer 2024-11-05)."""
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[-1]
VERSION_HEADER_FROM = "2025-06-18"
"""The first revision whose clients send ``MCP-Protocol-Version`` on every request."""

SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
