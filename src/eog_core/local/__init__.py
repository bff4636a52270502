"""The embedded reference gym: an aiohttp server with the surface of an EOG gym.

``LocalGym`` serves REST on SQLite (seed, SQL runner, delete, health) and MCP over
Streamable HTTP (JSON or SSE answers), with fault knobs, counters and a
server-side :class:`Ledger` of seeds, deletes and tool executions for tests.
:class:`FaultProxy` injects network and gateway faults in front of any gym;
:class:`GymProcess` runs a gym in its own process to kill and restart.
:class:`ScriptedModel` is an OpenAI-compatible model server playing scripts
(``eog-core serve-model``), with the wire faults of real servers.
``LocalGym.demo()`` serves the demo CSM domain whose files ``demo_paths()`` names.
"""

from __future__ import annotations

from eog_core import _plumbing
from eog_core.errors import ToolError

from ._ledger import ExecutionKey, Ledger
from ._mcp import (
    LATEST_PROTOCOL_VERSION,
    MISSING_DATABASE_ID_TEXT,
    SUPPORTED_PROTOCOL_VERSIONS,
    ResponseMode,
)
from ._model import FINAL_TEXT, CutOff, ModelFault, ScriptedModel, demo_scripts
from ._process import GymProcess
from ._proxy import Fault, FaultProxy
from ._roles import DECOMPOSITION, PLAN_TEXT, demo_plans, is_planner_request
from ._server import LocalGym, serve
from ._tools import RegisteredTool, ToolContext, ToolRegistry
from .demo import (
    DEMO_SERVER_NAME,
    DEMO_SERVER_PORT,
    DemoPaths,
    build_demo_tools,
    demo_paths,
    demo_tool_snapshot,
    load_demo_task,
    load_demo_trajectory,
    read_demo_seed,
)

__all__ = [
    "DECOMPOSITION",
    "DEMO_SERVER_NAME",
    "DEMO_SERVER_PORT",
    "FINAL_TEXT",
    "LATEST_PROTOCOL_VERSION",
    "MISSING_DATABASE_ID_TEXT",
    "PLAN_TEXT",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CutOff",
    "DemoPaths",
    "ExecutionKey",
    "Fault",
    "FaultProxy",
    "GymProcess",
    "Ledger",
    "LocalGym",
    "ModelFault",
    "RegisteredTool",
    "ResponseMode",
    "ScriptedModel",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "build_demo_tools",
    "demo_paths",
    "demo_plans",
    "demo_scripts",
    "demo_tool_snapshot",
    "is_planner_request",
    "load_demo_task",
    "load_demo_trajectory",
    "read_demo_seed",
    "serve",
]


#: ``ToolSpec`` was 0.1's name of :class:`RegisteredTool`; ``eog_core.tasks.ToolSpec`` is
#: the model's view of a tool, so the old name is served, not exported, for one release.
__getattr__ = _plumbing.deprecated_attribute(
    __name__, {"ToolSpec": (lambda: RegisteredTool, "use eog_core.local.RegisteredTool")}
)
