"""``--certificates DIR`` of ``score`` and ``report``: the tasks' certificates read once, checked
before any other work, and handed to :mod:`eog_core.metrics` as each task's trust.

A folder that is not there, a file that is not JSON or not ``eog-certificate/1`` is
refused in one line naming the file (exit 2). A certificate is stale when its
``task_sha256`` differs from the task as given with ``--tasks`` (run records do not hold
the task's bytes, so without ``--tasks`` no certificate can be told stale).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import SchemaError, UsageError
from eog_core.metrics import (
    CertificateLike,
    CorrectedSummary,
    RunRecord,
    TaskTrust,
    TrustSummary,
    format_trust,
    task_digests,
    task_trust,
    trust_summary,
)

__all__ = ["TrustPart", "add_certificates_option", "read_certificates_option", "trust_part"]


def add_certificates_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--certificates",
        type=Path,
        metavar="DIR",
        help=f"the tasks' certificates (eog-core certify --out DIR): {what}; a certificate "
        "whose task changed since (its sha256 against --tasks) counts as unchecked (stale)",
    )


def read_certificates_option(directory: Path | None) -> Mapping[str, CertificateLike] | None:
    """The certificates of ``--certificates DIR`` by task id; ``None`` without the option.
    Raises :class:`UsageError` (exit 2) naming the file that cannot be read."""
    if directory is None:
        return None
    from eog_core.certify import read_certificates

    try:
        return read_certificates(directory)
    except SchemaError as exc:
        where = "" if exc.path == "$" else f"{exc.path}: "
        raise UsageError(f"--certificates {exc.source}: {where}{exc.reason}") from None


def tasks_trust(
    certificates: Mapping[str, CertificateLike], task_ids: Iterable[str], tasks: Path | None
) -> dict[str, TaskTrust]:
    """Each task's trust; with ``tasks`` (``--tasks``) a certificate of other bytes is stale."""
    return task_trust(task_ids, certificates, task_digests(tasks) if tasks else None)


@attrs.frozen(kw_only=True)
class TrustPart:
    """What ``score --certificates`` adds beside its usual numbers."""

    directory: Path
    trust: Mapping[str, TaskTrust]
    summary: TrustSummary

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "tasks": {task_id: t.to_dict() for task_id, t in self.trust.items()},
            "groups": [attrs.asdict(group) for group in self.summary.groups],
            "stale": self.summary.stale,
            "kinds": [list(item) for item in self.summary.kinds],
            "clean": attrs.asdict(self.summary.clean) if self.summary.clean else None,
            "certified": attrs.asdict(self.summary.certified) if self.summary.certified else None,
        }

    def text(self, overall: CorrectedSummary) -> str:
        return format_trust(self.summary, overall)


def trust_part(
    args: argparse.Namespace,
    certificates: Mapping[str, CertificateLike] | None,
    records: list[RunRecord],
) -> TrustPart | None:
    """The certificates' part of ``score``'s output; ``None`` without ``--certificates``."""
    if certificates is None:
        return None
    trust = tasks_trust(certificates, (r.task_id for r in records), args.tasks)
    return TrustPart(
        directory=args.certificates,
        trust=trust,
        summary=trust_summary(records, trust, k=args.k),
    )
