"""What a path given to ``score``, ``compare`` or ``report`` holds: one reading of a run.

A folder with a ``rollouts.jsonl`` (``eog-core run``, the gateway) is that file: both
verdicts of every rollout. Any other folder is an upstream result folder
(``run_<i>/results_*.json``, parity only), as a run's ``upstream/`` is when named
itself. A ``.jsonl`` file is a rollout or verdict file. Anything else is refused
here, in one wording for every command.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import attrs

from eog_core.metrics._records import MetricsError
from eog_core.metrics._results import MetricsInput
from eog_core.metrics._upstream import read_upstream_results
from eog_core.metrics._verdicts import read_verdicts

__all__ = ["RunLocation", "locate_run", "read_run"]

_ROLLOUTS_FILE = "rollouts.jsonl"  # as eog_core.run writes it


@attrs.frozen(kw_only=True)
class RunLocation:
    """Where a run's records are: a ``.jsonl`` of verdict lines, or an upstream result folder."""

    kind: Literal["rollouts", "upstream"]
    path: Path


_NOT_A_RUN = (
    f"not a run: expected a run folder (with {_ROLLOUTS_FILE}), a rollout or verdict "
    ".jsonl file, or an upstream result folder (run_<i>/results_*.json)"
)


def locate_run(path: str | os.PathLike[str]) -> RunLocation:
    """The records ``path`` stands for; a path that is no run raises :class:`MetricsError`."""
    source = Path(path)
    if source.is_dir():
        rollouts = source / _ROLLOUTS_FILE
        if rollouts.is_file():
            return RunLocation(kind="rollouts", path=rollouts)
        if next(source.rglob("results_*.json"), None) is not None:
            return RunLocation(kind="upstream", path=source)
        raise MetricsError(_NOT_A_RUN, source=str(source))
    if source.is_file() and source.suffix == ".jsonl":
        return RunLocation(kind="rollouts", path=source)
    if not source.exists():
        raise MetricsError("no such file or folder", source=str(source))
    raise MetricsError(_NOT_A_RUN, source=str(source))


def read_run(path: str | os.PathLike[str]) -> list[MetricsInput]:
    """The verdict lines or upstream result files of the run at ``path`` (:func:`locate_run`)."""
    where = locate_run(path)
    if where.kind == "rollouts":
        return list(read_verdicts(where.path))
    return list(read_upstream_results(where.path))
