"""Which numbers to trust: each task's certificate (``eog-core certify``) applied to a run.

``report`` and ``score --certificates DIR`` mark every task of a run by what its
certificate says (:func:`task_trust`) and split the run by it (:func:`trust_summary`):

* ``certified``: no finding, an oracle passed and every counterexample failed;
* ``clean``: no finding, no oracle given;
* ``flagged``: at least one finding (its kinds are kept);
* ``unchecked``: no certificate, one that could not complete (``incomplete``), or a
  *stale* one, whose ``task_sha256`` differs from the sha256 of the task as given now
  (:func:`task_digests` of the task files: run records do not hold the task's bytes).

The score "over clean tasks" is over the tasks certified or clean (no finding); "over
certified tasks" over the certified ones alone. Both are :func:`corrected_summary` of the
run's records of those tasks, beside the run's own numbers, never instead of them.

This module takes certificates as any object with ``status``, ``kinds`` and
``task_sha256`` (:class:`CertificateLike`; ``eog_core.certify.Certificate`` is one), so
``metrics`` does not import ``certify`` (which sits above it).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol

import attrs

from eog_core._plumbing import percent
from eog_core.metrics._grid import grid_table
from eog_core.metrics._records import PolicyName, RunRecord
from eog_core.metrics._results import CorrectedSummary, corrected_summary
from eog_core.metrics._tasks import task_outcomes
from eog_core.tasks import TASK_SUFFIXES, load_task, load_tasks

__all__ = [
    "TRUST_STATUSES",
    "CertificateLike",
    "TaskTrust",
    "TrustGroup",
    "TrustStatus",
    "TrustSummary",
    "task_digests",
    "task_trust",
    "trust_summary",
]

TrustStatus = Literal["certified", "clean", "flagged", "unchecked"]
TRUST_STATUSES: tuple[TrustStatus, ...] = ("certified", "clean", "flagged", "unchecked")
_POLICIES: tuple[PolicyName, ...] = ("strict", "parity")


class CertificateLike(Protocol):
    """What :func:`task_trust` reads of a certificate."""

    @property
    def status(self) -> str: ...

    @property
    def kinds(self) -> tuple[str, ...]: ...

    @property
    def task_sha256(self) -> str: ...


@attrs.frozen(kw_only=True)
class TaskTrust:
    """How far one task can be trusted: its status, the kinds of its findings, and why it is
    unchecked (``stale``: the certificate is of other task bytes; ``certificate``: the
    certificate's own status, ``None`` without one)."""

    task_id: str
    status: TrustStatus
    kinds: tuple[str, ...] = ()
    stale: bool = False
    certificate: str | None = None

    @property
    def label(self) -> str:
        """``certified``, ``clean``, ``flagged: KIND, ...``, ``unchecked``,
        ``unchecked (stale)`` or ``unchecked (incomplete)``."""
        if self.status == "flagged":
            return "flagged: " + ", ".join(self.kinds) if self.kinds else "flagged"
        if self.status == "unchecked" and self.stale:
            return "unchecked (stale)"
        if self.status == "unchecked" and self.certificate == "incomplete":
            return "unchecked (incomplete)"
        return self.status

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "kinds": list(self.kinds),
            "stale": self.stale,
            "certificate": self.certificate,
            "label": self.label,
        }


def _one(task_id: str, certificate: CertificateLike | None, digest: str | None) -> TaskTrust:
    if certificate is None:
        return TaskTrust(task_id=task_id, status="unchecked")
    own = certificate.status
    if digest is not None and certificate.task_sha256 and certificate.task_sha256 != digest:
        return TaskTrust(task_id=task_id, status="unchecked", stale=True, certificate=own)
    if own == "flagged":
        return TaskTrust(
            task_id=task_id, status="flagged", kinds=tuple(certificate.kinds), certificate=own
        )
    if own in ("certified", "clean"):
        return TaskTrust(task_id=task_id, status=own, certificate=own)  # type: ignore[arg-type]
    return TaskTrust(task_id=task_id, status="unchecked", certificate=own)


def task_trust(
    task_ids: Iterable[str],
    certificates: Mapping[str, CertificateLike],
    digests: Mapping[str, str] | None = None,
) -> dict[str, TaskTrust]:
    """Each task id's trust from its certificate; ``digests`` (task id -> sha256 of the task's
    bytes, :func:`task_digests`) tells a stale certificate, and without it none is stale."""
    known = digests or {}
    return {
        task_id: _one(task_id, certificates.get(task_id), known.get(task_id))
        for task_id in sorted(set(task_ids))
    }


@attrs.frozen(kw_only=True)
class TrustGroup:
    """The tasks of one status in a run: how many, their rollouts, and the percentage points
    of the task-weighted success rate (pass@1) they contribute, per policy (``None`` where
    the run has no scored task under the policy)."""

    status: TrustStatus
    tasks: int
    rollouts: int
    points: Mapping[PolicyName, float | None]


@attrs.frozen(kw_only=True)
class TrustSummary:
    """A run split by its tasks' trust; ``clean`` is scored over the tasks certified or clean,
    ``certified`` over the certified ones (``None`` when there are none)."""

    groups: tuple[TrustGroup, ...]
    stale: int
    kinds: tuple[tuple[str, int], ...]
    """(kind, flagged tasks with a finding of that kind), most tasks first."""
    clean: CorrectedSummary | None
    certified: CorrectedSummary | None

    def group(self, status: TrustStatus) -> TrustGroup:
        return next(g for g in self.groups if g.status == status)


def _points(runs: Sequence[RunRecord], policy: PolicyName) -> dict[str, float] | None:
    """Each task id's share, in percentage points, of the run's task-weighted success rate."""
    outcomes = [o for o in task_outcomes(runs, policy) if o.success_rate is not None]
    if not outcomes:
        return None
    shares: dict[str, list[float]] = defaultdict(list)
    for outcome in outcomes:
        assert outcome.success_rate is not None
        shares[outcome.task_id].append(outcome.success_rate)
    return {task_id: 100 * math.fsum(s) / len(outcomes) for task_id, s in shares.items()}


def trust_summary(
    runs: Sequence[RunRecord], trust: Mapping[str, TaskTrust], *, k: int | None = None
) -> TrustSummary:
    """Split ``runs`` by the trust of their tasks (a task id absent from ``trust`` is
    unchecked) and score the clean and the certified tasks as ``score`` scores a run."""

    def status(run: RunRecord) -> TrustStatus:
        found = trust.get(run.task_id)
        return found.status if found is not None else "unchecked"

    points = {policy: _points(runs, policy) for policy in _POLICIES}
    groups = []
    for name in TRUST_STATUSES:
        mine = [run for run in runs if status(run) == name]
        ids = {run.task_id for run in mine}
        groups.append(
            TrustGroup(
                status=name,
                tasks=len({run.task_key for run in mine}),
                rollouts=len(mine),
                points={
                    policy: None
                    if shares is None
                    else math.fsum(v for t, v in shares.items() if t in ids)
                    for policy, shares in points.items()
                },
            )
        )
    seen = {run.task_id for run in runs}
    flagged = [t for t in trust.values() if t.task_id in seen and t.status == "flagged"]
    kinds = Counter(kind for t in flagged for kind in t.kinds)
    clean = [run for run in runs if status(run) in ("certified", "clean")]
    certified = [run for run in runs if status(run) == "certified"]
    return TrustSummary(
        groups=tuple(groups),
        stale=sum(1 for t in trust.values() if t.task_id in seen and t.stale),
        kinds=tuple(sorted(kinds.items(), key=lambda item: (-item[1], item[0]))),
        clean=corrected_summary(clean, k=k) if clean else None,
        certified=corrected_summary(certified, k=k) if certified else None,
    )


def _rates(summary: CorrectedSummary | None) -> list[str]:
    cells = []
    for policy in _POLICIES:
        stats = summary.overall.policy(policy) if summary is not None else None
        cells += [
            percent(stats.task_success_rate if stats else None),
            percent(stats.run_success_rate if stats else None),
        ]
    return cells


def _points_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_trust(trust: TrustSummary, overall: CorrectedSummary) -> str:
    """The certificates' table ``score --certificates`` prints under the corrected numbers."""
    rows = []
    for name, summary in (
        ("all tasks", overall),
        ("clean or certified tasks", trust.clean),
        ("certified tasks", trust.certified),
    ):
        group = summary.overall if summary is not None else None
        tasks, runs = (group.tasks, group.runs) if group is not None else (0, 0)
        rows.append([name, str(tasks), str(runs), *_rates(summary)])
    headers = [
        "Over",
        "Tasks",
        "Rollouts",
        "Strict (tasks) %",
        "Strict (runs) %",
        "Parity (tasks) %",
        "Parity (runs) %",
    ]
    resting = [
        [
            group.status,
            str(group.tasks),
            str(group.rollouts),
            _points_cell(group.points.get("strict")),
            _points_cell(group.points.get("parity")),
        ]
        for group in trust.groups
    ]
    kinds = ", ".join(f"{kind} {count}" for kind, count in trust.kinds) or "none"
    lines = [
        "CERTIFICATES (eog-core certify; docs/certify.md)",
        grid_table(headers, rows),
        grid_table(["Status", "Tasks", "Rollouts", "Strict (pp)", "Parity (pp)"], resting),
        f"Flagged tasks by finding kind: {kinds}. Stale certificates (task changed since): "
        f"{trust.stale}, counted as unchecked.",
        "clean or certified: tasks without a finding; certified: an oracle passed and every",
        "counterexample failed; unchecked: no certificate, an incomplete or a stale one.",
        "pp: the percentage points of the task-weighted success (pass@1) resting on those tasks.",
    ]
    return "\n".join(lines)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def task_digests(path: str | os.PathLike[str]) -> dict[str, str]:
    """Task id -> sha256 of the task's bytes, as ``certify`` records it: a ``.json`` file's
    bytes, a ``.jsonl`` row's (without its line end), a ``.parquet`` file's; a folder is
    walked as :func:`eog_core.load_tasks` walks it."""
    root = Path(path)
    files = (
        sorted(p for p in root.rglob("*") if p.suffix in TASK_SUFFIXES and p.is_file())
        if root.is_dir()
        else [root]
    )
    found: dict[str, str] = {}
    for file in files:
        data = file.read_bytes()
        if file.suffix == ".jsonl":
            rows = [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]
            for task, row in zip(load_tasks(file), rows, strict=True):
                if task.task_id:
                    found[task.task_id] = _sha256(row)
        elif file.suffix == ".parquet":
            found |= {t.task_id: _sha256(data) for t in load_tasks(file) if t.task_id}
        elif (task := load_task(file)).task_id:
            found[task.task_id] = _sha256(data)
    return found
