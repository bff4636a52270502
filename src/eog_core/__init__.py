"""eog_core: task schemas, verifier engine and gym client for EnterpriseOps-Gym.

The names below are the stable public API; harnesses import them from here.
"""

from eog_core.errors import EogError, SchemaError
from eog_core.tasks import Task, load_task, load_tasks
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

__version__ = "0.1.0"

__all__ = [
    "PARITY",
    "STRICT",
    "EogError",
    "SchemaError",
    "SqlOutcome",
    "SqliteSqlRunner",
    "Task",
    "TaskVerdict",
    "__version__",
    "compare_values",
    "extract_value",
    "load_task",
    "load_tasks",
    "verify_task",
]
