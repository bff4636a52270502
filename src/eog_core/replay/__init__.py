"""Re-checking a run someone else made: re-score it offline, or replay it into fresh gyms.

:func:`rescore_run` runs (revised) tasks' verifiers on a run's captured final states in
SQLite, no model and no gym, into a new run folder with both verdicts, their provenance
and what flipped. The package sits on ``run`` (the folder format), ``state``, ``verify``
and ``tasks``; nothing else imports it but the command line (``docs/state.md``).
"""

from eog_core.replay._rescore import (
    RESCORE_FILE,
    RESCORE_FORMAT,
    Flip,
    RescoreReport,
    rescore_run,
)
from eog_core.replay._source import SourceRun, TaskFile, load_task_files

__all__ = [
    "RESCORE_FILE",
    "RESCORE_FORMAT",
    "Flip",
    "RescoreReport",
    "SourceRun",
    "TaskFile",
    "load_task_files",
    "rescore_run",
]
