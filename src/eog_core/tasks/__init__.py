"""Task schemas, loaders for the three task formats (JSON, JSONL, Parquet), dataset
selection, and tool snapshots."""

from eog_core import _plumbing
from eog_core.tasks import _convert, _deprecated  # noqa: F401 (_deprecated attaches the 0.1 methods)
from eog_core.tasks._convert import structure_or_raise
from eog_core.tasks._dataset import (
    MODES,
    mode_from_path,
    parquet_rows,
    sample_stratified,
    select_tasks,
    task_from_row,
)
from eog_core.tasks._formats import task_from_mapping
from eog_core.tasks._load import DEFAULT_GYMS, TASK_SUFFIXES, iter_tasks, load_task, load_tasks
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
from eog_core.tasks._write import task_record, to_upstream

__all__ = [
    "DEFAULT_GYMS",
    "MISSING_MODE",
    "MODES",
    "TASK_SUFFIXES",
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
    "merge_tools",
    "mode_from_path",
    "parquet_rows",
    "raw_schema",
    "sample_stratified",
    "select_tasks",
    "structure_or_raise",
    "task_from_mapping",
    "task_from_row",
    "task_record",
    "to_nemo_row",
    "to_upstream",
]


#: Plumbing that was public in 0.2 (not exported; docs/api.md, "Stability").
__getattr__ = _plumbing.deprecated_attribute(
    __name__,
    {
        "make_converter": (
            lambda: _convert.make_converter,
            "use structure_or_raise(data, cls) to read a record",
        ),
    },
)
