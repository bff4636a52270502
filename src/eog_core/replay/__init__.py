"""Re-checking a run someone else made: re-score it offline, or replay it into fresh gyms.

:func:`rescore_run` runs (revised) tasks' verifiers on a run's captured final states in
SQLite, no model and no gym, into a new run folder with both verdicts, their provenance
and what flipped. :func:`replay_run` re-executes each rollout's recorded tool calls into
fresh gyms and says whether outputs, states and verdicts reproduce. The package sits on ``run`` (the folder format), ``state``, ``gym``,
``verify`` and ``tasks``; nothing else imports it but the command line (``docs/state.md``).
"""

from eog_core.replay._normalise import IdMap
from eog_core.replay._replay import (
    REPLAY_FILE,
    REPLAY_FORMAT,
    ReplayIncomplete,
    ReplayReport,
    RolloutReplay,
    replay_run,
)
from eog_core.replay._rescore import (
    RESCORE_FILE,
    RESCORE_FORMAT,
    Flip,
    RescoreReport,
    rescore_run,
)
from eog_core.replay._source import SourceRun, TaskFile, load_task_files

__all__ = [
    "REPLAY_FILE",
    "REPLAY_FORMAT",
    "RESCORE_FILE",
    "RESCORE_FORMAT",
    "Flip",
    "IdMap",
    "ReplayIncomplete",
    "ReplayReport",
    "RescoreReport",
    "RolloutReplay",
    "SourceRun",
    "TaskFile",
    "load_task_files",
    "replay_run",
    "rescore_run",
]
