"""eog_core: task schemas, verifier engine and gym client for EnterpriseOps-Gym.

The names below are the stable public API; harnesses import them from here.
"""

import importlib
from typing import TYPE_CHECKING, Any

from eog_core.errors import (
    ClosedError,
    ContextOverflowError,
    EogError,
    FleetError,
    GymError,
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    HeaderError,
    JsonRpcError,
    JudgeError,
    MetricsError,
    MissingExtraError,
    ModelError,
    ModelHTTPError,
    ModelOutageError,
    ModelPreflightError,
    ModelUnreachableError,
    ProtocolVersionError,
    RequestError,
    SchemaError,
    SeedArchiveError,
    SeedError,
    SeedFileError,
    StateError,
    ToolCallParseError,
    ToolError,
    UsageError,
    VerificationError,
    WorkRefused,
)
from eog_core.model_view import final_answer, tool_observation, tools_used
from eog_core.tasks import Task, clean_schema, load_task, load_tasks, to_nemo_row
from eog_core.verify import (
    PARITY,
    STRICT,
    SqliteSqlRunner,
    SqlOutcome,
    TaskVerdict,
    compare_values,
    extract_value,
    verify_task,
)

if TYPE_CHECKING:
    from eog_core.gym import (
        GymClient,
        GymDirectory,
        HttpSqlRunner,
        Janitor,
        SessionHandle,
        SessionStart,
        TaskSession,
        ToolCallRecord,
        ToolResult,
    )

from eog_core._version import __version__

# The gym SDK pulls in aiohttp; load it on first use so that pure scoring
# (tasks + verify) imports quickly.
_LAZY = {
    **dict.fromkeys(
        (
            "GymClient",
            "GymDirectory",
            "HttpSqlRunner",
            "Janitor",
            "SessionHandle",
            "SessionStart",
            "TaskSession",
            "ToolCallRecord",
            "ToolResult",
        ),
        "eog_core.gym",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'eog_core' has no attribute {name!r}")


__all__ = [
    "PARITY",
    "STRICT",
    "ClosedError",
    "ContextOverflowError",
    "EogError",
    "FleetError",
    "GymClient",
    "GymDirectory",
    "GymError",
    "GymHTTPError",
    "GymProtocolError",
    "GymTimeoutError",
    "GymUnreachableError",
    "HeaderError",
    "HttpSqlRunner",
    "Janitor",
    "JsonRpcError",
    "JudgeError",
    "MetricsError",
    "MissingExtraError",
    "ModelError",
    "ModelHTTPError",
    "ModelOutageError",
    "ModelPreflightError",
    "ModelUnreachableError",
    "ProtocolVersionError",
    "RequestError",
    "SchemaError",
    "SeedArchiveError",
    "SeedError",
    "SeedFileError",
    "SessionHandle",
    "SessionStart",
    "SqlOutcome",
    "SqliteSqlRunner",
    "StateError",
    "Task",
    "TaskSession",
    "TaskVerdict",
    "ToolCallParseError",
    "ToolCallRecord",
    "ToolError",
    "ToolResult",
    "UsageError",
    "VerificationError",
    "WorkRefused",
    "__version__",
    "clean_schema",
    "compare_values",
    "extract_value",
    "final_answer",
    "load_task",
    "load_tasks",
    "to_nemo_row",
    "tool_observation",
    "tools_used",
    "verify_task",
]
