"""The outcome of one verifier SQL query, and the protocol of whoever runs it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import attrs

__all__ = ["ErrorKind", "SqlOutcome", "SqlRunner"]

ErrorKind = Literal["database", "transport", "answer", "config"]


@attrs.frozen(kw_only=True)
class SqlOutcome:
    """What a gym's ``/api/sql-runner`` answered for one query.

    ``body`` is the decoded JSON body on success (``{"data": [...]}`` for real
    gyms). On failure ``error`` is upstream's text (``SQL API call failed (HTTP
    400): no such table: t``) and ``error_kind`` tells a query the database
    rejected (``"database"``) from a gym that could not be reached or no
    longer holds the database (``"transport"``), from a success status whose
    body is not JSON (``"answer"``) and from a gym that refused our credentials
    (``"config"``): strict scoring treats them differently.
    """

    success: bool
    body: Any = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    status: int | None = None

    @classmethod
    def ok(cls, body: Any) -> SqlOutcome:
        return cls(success=True, body=body)

    @classmethod
    def failed(
        cls, error: str, *, kind: ErrorKind = "database", status: int | None = None
    ) -> SqlOutcome:
        return cls(success=False, error=error, error_kind=kind, status=status)

    @classmethod
    def from_upstream(cls, outcome: Mapping[str, Any]) -> SqlOutcome:
        """Read upstream's ``{"success": ..., "result"/"error": ...}`` wrapper."""
        if outcome.get("success"):
            return cls.ok(outcome.get("result"))
        return cls.failed(str(outcome.get("error")))

    def to_upstream(self) -> dict[str, Any]:
        """Upstream's wrapper: ``{"success": true, "result": body}`` or ``{"success": false, "error": text}``."""
        if self.success:
            return {"success": True, "result": self.body}
        return {"success": False, "error": self.error}


class SqlRunner(Protocol):
    """Runs a verifier query against one gym's database.

    Implementations: :class:`eog_core.SqliteSqlRunner` (offline snapshots) and the
    HTTP runner of the gym client. A runner answers failures as a failed
    :class:`SqlOutcome`; it raises only for programming errors. A runner whose
    answers are capped (a real gym's sql-runner appends ``LIMIT 100`` to a query
    without a LIMIT of its own) says so with an ``implicit_limit`` attribute, the
    number of rows (read with :func:`eog_core.verify.implicit_limit_of`; absent
    means every row is answered): strict scoring reports an answer of exactly
    that many rows to such a query as possibly truncated.
    """

    async def run_sql(
        self,
        gym_name: str,
        database_id: str | None,
        query: str,
        context: Mapping[str, str],
    ) -> SqlOutcome: ...
