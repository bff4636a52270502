"""The one per-run record every metric works on, whatever file it came from.

Upstream result files (``runs[]`` inside ``results_*.json``) and our verdict
JSONL lines are both turned into :class:`RunRecord`, so the corrected summary and
the paired comparison have one input shape.
"""

from __future__ import annotations

from typing import Literal

import attrs

from eog_core.errors import MetricsError

__all__ = ["MetricsError", "PolicyName", "PolicyOutcome", "RunRecord", "TaskKey"]

#: The two scoring policies a run can be judged under.
PolicyName = Literal["strict", "parity"]

#: A task as metrics see it: (mode, domain, task_id). The same task id in two
#: modes is two different evaluations.
TaskKey = tuple[str, str, str]


@attrs.frozen(kw_only=True)
class PolicyOutcome:
    """How one run fared under one policy.

    ``completed`` is false when the evaluation itself did not finish (the agent
    crashed, a gym was unreachable, a verifier query failed in strict mode):
    such a run says nothing about the agent and is left out of every rate.
    """

    success: bool
    pass_rate: float
    completed: bool = True
    failure_kind: str | None = None


@attrs.frozen(kw_only=True)
class RunRecord:
    """One attempt (``repeat``, 0-based) at one task, judged under one or both policies."""

    task_id: str
    domain: str
    mode: str
    repeat: int
    strict: PolicyOutcome | None = None
    parity: PolicyOutcome | None = None
    source: str | None = None
    source_index: int | None = attrs.field(default=None, eq=False)
    """For a run read from an upstream result file: its position in the file's ``runs[]``."""

    @property
    def task_key(self) -> TaskKey:
        return (self.mode, self.domain, self.task_id)

    @property
    def primary(self) -> PolicyOutcome | None:
        """The strict outcome when there is one, else the parity outcome."""
        return self.strict if self.strict is not None else self.parity

    def outcome(self, policy: PolicyName | None = None) -> PolicyOutcome | None:
        """The outcome under ``policy``; ``None`` asks for :attr:`primary`."""
        if policy is None:
            return self.primary
        return self.strict if policy == "strict" else self.parity
