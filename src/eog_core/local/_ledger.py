"""What a gym really did, counted on the server: seeds, deletes and tool executions.

Chaos runs judge the client by the server's account, not its own: a tool call
executed twice or a database left behind shows up here whatever the client
believed. A gym in another process can append every record to a journal file
(one JSON object per line, written with a single ``write`` so a killed process
leaves only whole lines); :meth:`Ledger.from_journal` reads it back across the
restarts of that process.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ["ExecutionKey", "Ledger"]


@attrs.frozen
class ExecutionKey:
    """One logical tool call: the same tool, database and arguments."""

    database_id: str
    tool: str
    arguments_digest: str


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """A short stable digest of tool arguments (canonical JSON)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


@attrs.define
class Ledger:
    """Counts per database and per tool call; optionally journaled to a file.

    ``incarnation`` numbers the starts of the gym that wrote the journal, so
    databases that died with a killed process are told apart from live ones.
    """

    journal: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    seeds: Counter[str] = attrs.field(factory=Counter, init=False)
    deletes: Counter[str] = attrs.field(factory=Counter, init=False)
    executions: Counter[ExecutionKey] = attrs.field(factory=Counter, init=False)
    incarnation: int = attrs.field(default=0, init=False)
    _live: set[str] = attrs.field(factory=set, init=False, repr=False)
    _fd: int | None = attrs.field(default=None, init=False, repr=False)

    # -- recording (the gym calls these) ------------------------------------

    def started(self) -> None:
        """The gym (re)started with no database: a new incarnation."""
        self.incarnation += 1
        self._live.clear()
        if self.journal is not None and self._fd is None:
            self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._write({"event": "start", "pid": os.getpid()})

    def stopped(self) -> None:
        """The gym stopped; its databases are gone."""
        self._live.clear()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def seeded(self, database_id: str) -> None:
        self._apply({"event": "seed", "database_id": database_id})
        self._write({"event": "seed", "database_id": database_id})

    def deleted(self, database_id: str) -> None:
        self._apply({"event": "delete", "database_id": database_id})
        self._write({"event": "delete", "database_id": database_id})

    def executed(self, database_id: str, tool: str, arguments: Mapping[str, Any]) -> None:
        record = {
            "event": "tool",
            "database_id": database_id,
            "tool": tool,
            "digest": arguments_digest(arguments),
        }
        self._apply(record)
        self._write(record)

    # -- reading ------------------------------------------------------------

    @property
    def live_databases(self) -> list[str]:
        """Databases of the current incarnation that were seeded and not deleted."""
        return sorted(self._live)

    def executed_more_than_once(self) -> dict[ExecutionKey, int]:
        """Logical tool calls the gym ran more than once (the chaos suite wants none)."""
        return {key: count for key, count in self.executions.items() if count > 1}

    @property
    def tool_executions(self) -> int:
        return sum(self.executions.values())

    @classmethod
    def from_journal(cls, path: str | os.PathLike[str]) -> Ledger:
        """Replay a journal (every incarnation); a torn last line is ignored."""
        ledger = cls()
        with Path(path).open(encoding="utf-8") as lines:
            ledger._replay(lines)
        return ledger

    def _replay(self, lines: Iterable[str]) -> None:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(record, dict):
                if record.get("event") == "start":
                    self.incarnation += 1
                    self._live.clear()
                else:
                    self._apply(record)

    def _apply(self, record: Mapping[str, Any]) -> None:
        event, database_id = record.get("event"), str(record.get("database_id"))
        if event == "seed":
            self.seeds[database_id] += 1
            self._live.add(database_id)
        elif event == "delete":
            self.deletes[database_id] += 1
            self._live.discard(database_id)
        elif event == "tool":
            key = ExecutionKey(database_id, str(record.get("tool")), str(record.get("digest")))
            self.executions[key] += 1

    def _write(self, record: Mapping[str, Any]) -> None:
        if self._fd is not None:
            os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
