"""The demo domain of the local gym: a small CSM database, its tools, one task.

Package data (shipped in the wheel): ``seed.sql`` (SQLite dump), ``task.json``
(one task in the upstream format) and ``trajectory.json`` (the tool calls that
solve it, as ``[{"name", "arguments"}, ...]``).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ._tools import build_demo_tools

if TYPE_CHECKING:
    from eog_core.tasks import ToolSnapshot

__all__ = [
    "DEMO_SERVER_NAME",
    "DEMO_SERVER_PORT",
    "DemoPaths",
    "build_demo_tools",
    "demo_paths",
    "demo_tool_snapshot",
    "load_demo_task",
    "load_demo_trajectory",
    "read_demo_seed",
]

DEMO_SERVER_NAME = "demo-csm-server"
DEMO_SERVER_PORT = 8101  # the port named by the demo task's mcp_server_url

SEED_FILE = "seed.sql"
TASK_FILE = "task.json"
TRAJECTORY_FILE = "trajectory.json"


@attrs.frozen(kw_only=True)
class DemoPaths:
    """Where the demo files live on disk."""

    directory: Path
    seed_sql: Path
    task: Path
    trajectory: Path


def demo_paths() -> DemoPaths:
    """Paths of the demo package data (the package must be installed as files, not zipped)."""
    directory = Path(str(resources.files(__name__)))
    return DemoPaths(
        directory=directory,
        seed_sql=directory / SEED_FILE,
        task=directory / TASK_FILE,
        trajectory=directory / TRAJECTORY_FILE,
    )


def _read(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def read_demo_seed() -> str:
    """The demo database as SQLite SQL."""
    return _read(SEED_FILE)


def load_demo_task() -> dict[str, Any]:
    """The demo task as the raw upstream JSON object."""
    task: dict[str, Any] = json.loads(_read(TASK_FILE))
    return task


def load_demo_trajectory() -> list[dict[str, Any]]:
    """The scripted tool calls, ``[{"name": ..., "arguments": {...}}, ...]``, in order."""
    calls: list[dict[str, Any]] = json.loads(_read(TRAJECTORY_FILE))
    return calls


def demo_tool_snapshot() -> ToolSnapshot:
    """The demo gym's tools as a snapshot (what ``tools/list`` answers), for
    ``TaskSession.start(tool_snapshots=...)`` and row building without a live gym."""
    from eog_core.tasks import ToolSnapshot, ToolSpec

    return ToolSnapshot(
        gym_name=DEMO_SERVER_NAME,
        gym_url=f"http://localhost:{DEMO_SERVER_PORT}",
        tools=tuple(
            ToolSpec.from_mcp(tool, gym=DEMO_SERVER_NAME) for tool in build_demo_tools().describe()
        ),
    )
