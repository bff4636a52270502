"""Running verifier SQL on a SQLite connection we control: read-only and with a deadline.

Shared by the offline :class:`~eog_core.verify.SqliteSqlRunner` and LocalGym's
``/api/sql-runner``. While a guarded query runs, SQLite's authorizer allows
only reading (``SELECT``, column reads, functions other than
``load_extension``, recursive CTEs), so nothing can write whatever the text
says, and a progress handler interrupts the query once its deadline passes or
its caller gave up. The progress handler only runs between virtual-machine
steps, and one step can be a single heavy call (``printf('%.*c', 900000000,
'x')``), so the deadline is checked again once the statement returns, and
SQLite's own length limit (``SQLITE_LIMIT_LENGTH``, :data:`MAX_VALUE_BYTES`)
bounds every string or blob the query builds: no single value can take the
machine's memory. (SQLite's heap limit is process-wide and Python exposes no
way to set it per connection, so the total heap is bounded by the deadline and
the per-value limit, not by a byte budget.) The hooks and the limit are
removed afterwards, so a lent connection is handed back as it came (apart from
any authorizer or progress handler its owner had set, which SQLite gives no
way to read back).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

__all__ = ["MAX_VALUE_BYTES", "READ_ONLY_HEADER", "QueryInterrupted", "execute_guarded"]

#: A gym SQL-runner request carrying this header (``1``) asks for a read-only
#: run: STRICT verification sends it, LocalGym honours it, other gyms ignore it.
READ_ONLY_HEADER = "x-eog-read-only"

_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_RECURSIVE,
    }
)
_FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "writefile"})
_ACTION_NAMES = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").replace("_", " ")
    for name in (
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_PRAGMA",
        "SQLITE_TRANSACTION",
        "SQLITE_SAVEPOINT",
        "SQLITE_ATTACH",
        "SQLITE_DETACH",
        "SQLITE_CREATE_TABLE",
        "SQLITE_CREATE_INDEX",
        "SQLITE_CREATE_VIEW",
        "SQLITE_CREATE_TRIGGER",
        "SQLITE_CREATE_TEMP_TABLE",
        "SQLITE_DROP_TABLE",
        "SQLITE_ALTER_TABLE",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
        "SQLITE_CREATE_VTABLE",
        "SQLITE_DROP_VIEW",
        "SQLITE_DROP_INDEX",
        "SQLITE_DROP_TRIGGER",
    )
    if hasattr(sqlite3, name)
}
#: SQLite virtual-machine steps between two deadline checks.
_CHECK_EVERY = 1000
#: The largest string or blob a guarded query may build (SQLite's
#: ``SQLITE_LIMIT_LENGTH`` while it runs; SQLite's default is 1 GB).
MAX_VALUE_BYTES = 32 * 1024 * 1024


class QueryInterrupted(Exception):
    """The query was stopped: ``reason`` is ``"timeout"`` or ``"cancelled"``."""

    def __init__(self, reason: str, timeout: float | None) -> None:
        self.reason = reason
        self.timeout = timeout
        what = f"ran past its {timeout:g}s deadline" if reason == "timeout" else "was cancelled"
        super().__init__(f"query interrupted: it {what}")


class _Guard:
    def __init__(self, timeout: float | None, cancelled: threading.Event | None) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.timeout = timeout
        self.cancelled = cancelled
        self.stopped: str | None = None
        self.refused: str | None = None

    def authorize(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        source: str | None,
    ) -> int:
        if action in _ALLOWED_ACTIONS and not (
            action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _FORBIDDEN_FUNCTIONS
        ):
            return sqlite3.SQLITE_OK
        if self.refused is None:
            self.refused = _ACTION_NAMES.get(action, f"action {action}")
            if action == sqlite3.SQLITE_FUNCTION:
                self.refused = f"function {arg2}"
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        if self.cancelled is not None and self.cancelled.is_set():
            self.stopped = "cancelled"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped = "timeout"
        return 1 if self.stopped else 0

    def check_after(self) -> None:
        """Fail a statement that returned past its deadline (one slow step the handler never saw)."""
        if self.progress():
            raise QueryInterrupted(self.stopped or "timeout", self.timeout)


def execute_guarded(
    connection: sqlite3.Connection,
    query: str,
    *,
    read_only: bool = True,
    timeout: float | None = None,
    cancelled: threading.Event | None = None,
    commit: bool = False,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one statement; return its column names and rows.

    Raises :class:`QueryInterrupted` past ``timeout`` seconds or once
    ``cancelled`` is set, ``sqlite3.DatabaseError`` (``not authorized: ...
    read-only``) when ``read_only`` and the statement would change anything, and
    any other ``sqlite3.Error`` as SQLite reports it (``string or blob too
    big`` for a value past :data:`MAX_VALUE_BYTES`). With ``commit`` a
    successful statement is committed and a failed one rolled back (a gym's
    SQL runner); the caller serialises use of the connection.
    """
    guard = _Guard(timeout, cancelled)
    if read_only:
        connection.set_authorizer(guard.authorize)
    connection.set_progress_handler(guard.progress, _CHECK_EVERY)
    length_limit = connection.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(length_limit, MAX_VALUE_BYTES))
    try:
        cursor = connection.execute(query)
        columns = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchall()
        guard.check_after()
        if commit:
            connection.commit()
    except QueryInterrupted:
        if commit:
            connection.rollback()
        raise
    except sqlite3.Error as exc:
        if commit:
            connection.rollback()
        if guard.stopped:
            raise QueryInterrupted(guard.stopped, timeout) from exc
        if guard.refused is not None:
            raise sqlite3.DatabaseError(
                f"not authorized: verifier SQL is read-only here (refused {guard.refused})"
            ) from exc
        raise
    finally:
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length_limit)
        connection.set_progress_handler(None, 0)
        if read_only:
            connection.set_authorizer(None)
    return columns, rows
