"""The one per-run record every metric works on, whatever file it came from.

Upstream result files (``runs[]`` inside ``results_*.json``) and our verdict
JSONL lines are both turned into :class:`RunRecord`, so the corrected summary and
the paired comparison have one input shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from eog_core.errors import MetricsError

__all__ = [
    "DAMAGE_OUTCOMES",
    "DamageOutcome",
    "MetricsError",
    "PolicyName",
    "PolicyOutcome",
    "RunRecord",
    "TaskKey",
    "parse_damage",
]

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


#: What a record's ``damage.outcome`` may be (docs/state.md); the first three are judged.
DAMAGE_OUTCOMES = ("PASS", "FAIL_SAFE", "FAIL_DAMAGE", "unjudged")


@attrs.frozen(kw_only=True)
class DamageOutcome:
    """A rollout record's ``damage`` field as the rates need it (the deltas counted, not kept)."""

    outcome: str
    severity: str | None = None
    dollars: float | None = None
    changes: int = 0
    """How many rows changed (every delta, allowed ones included)."""
    damaging_changes: int = 0
    """How many of them are damage."""

    @property
    def judged(self) -> bool:
        return self.outcome != "unjudged"


def parse_damage(value: Any, prefix: str = "$.damage") -> DamageOutcome | None:
    """A record's ``damage`` field (``None`` when absent); a malformed one raises ``ValueError``
    naming its JSON path, as every other field of a verdict line does."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{prefix}: expected an object or null, got {value!r}")
    outcome = value.get("outcome")
    if outcome not in DAMAGE_OUTCOMES:
        raise ValueError(
            f"{prefix}.outcome: expected one of {', '.join(DAMAGE_OUTCOMES)}, got {outcome!r}"
        )
    severity = value.get("severity")
    if severity is not None and not isinstance(severity, str):
        raise ValueError(f"{prefix}.severity: expected a string or null, got {severity!r}")
    dollars = value.get("dollars")
    if dollars is not None and (
        isinstance(dollars, bool)
        or not isinstance(dollars, int | float)
        or not math.isfinite(dollars)
    ):
        raise ValueError(f"{prefix}.dollars: expected a number or null, got {dollars!r}")
    deltas = value.get("deltas", [])
    if not isinstance(deltas, list):
        raise ValueError(f"{prefix}.deltas: expected a list, got {deltas!r}")
    return DamageOutcome(
        outcome=outcome,
        severity=severity,
        dollars=None if dollars is None else float(dollars),
        changes=len(deltas),
        damaging_changes=sum(
            1 for d in deltas if isinstance(d, Mapping) and d.get("verdict") == "damage"
        ),
    )


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
    damage: DamageOutcome | None = attrs.field(default=None, eq=False)
    """The record's collateral-damage verdict; ``None`` without state capture."""

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
