"""The embedded reference gym: an aiohttp server with the surface of an EOG gym.

``LocalGym`` serves REST on SQLite (seed, SQL runner, delete, health) and MCP over
Streamable HTTP (JSON or SSE answers), with fault knobs and counters for tests.
``LocalGym.demo()`` serves the demo CSM domain whose files ``demo_paths()`` names.
"""

from __future__ import annotations

from ._mcp import (
    LATEST_PROTOCOL_VERSION,
    MISSING_DATABASE_ID_TEXT,
    SUPPORTED_PROTOCOL_VERSIONS,
    ResponseMode,
)
from ._server import LocalGym, serve
from ._tools import ToolContext, ToolError, ToolRegistry, ToolSpec
from .demo import (
    DEMO_SERVER_NAME,
    DEMO_SERVER_PORT,
    DemoPaths,
    build_demo_tools,
    demo_paths,
    load_demo_task,
    load_demo_trajectory,
    read_demo_seed,
)

__all__ = [
    "DEMO_SERVER_NAME",
    "DEMO_SERVER_PORT",
    "LATEST_PROTOCOL_VERSION",
    "MISSING_DATABASE_ID_TEXT",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "DemoPaths",
    "LocalGym",
    "ResponseMode",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolSpec",
    "build_demo_tools",
    "demo_paths",
    "load_demo_task",
    "load_demo_trajectory",
    "read_demo_seed",
    "serve",
]
