"""Task schemas, loaders for the three task formats, and tool snapshots."""

from eog_core.tasks._convert import make_converter
from eog_core.tasks._load import DEFAULT_GYMS, iter_tasks, load_task, load_tasks
from eog_core.tasks._rows import to_nemo_row
from eog_core.tasks._schema import (
    MISSING_MODE,
    AuthConfig,
    DatabaseStateCheck,
    DatabaseStateVerifier,
    GymServer,
    ResponseCheck,
    ResponseCheckVerifier,
    Task,
    ToolExecutionCheck,
    ToolExecutionVerifier,
    UnknownVerifier,
    Verifier,
)
from eog_core.tasks._tools import (
    ToolSet,
    ToolSnapshot,
    ToolSpec,
    clean_schema,
    load_tool_snapshots,
    merge_tools,
    raw_schema,
)

__all__ = [
    "DEFAULT_GYMS",
    "MISSING_MODE",
    "AuthConfig",
    "DatabaseStateCheck",
    "DatabaseStateVerifier",
    "GymServer",
    "ResponseCheck",
    "ResponseCheckVerifier",
    "Task",
    "ToolExecutionCheck",
    "ToolExecutionVerifier",
    "ToolSet",
    "ToolSnapshot",
    "ToolSpec",
    "UnknownVerifier",
    "Verifier",
    "clean_schema",
    "iter_tasks",
    "load_task",
    "load_tasks",
    "load_tool_snapshots",
    "make_converter",
    "merge_tools",
    "raw_schema",
    "to_nemo_row",
]
