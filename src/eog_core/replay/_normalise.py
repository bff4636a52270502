"""What a replay may differ in: generated ids (remapped) and timestamps (masked).

A tool's output is compared as JSON, JSON text inside strings read too (an MCP result's
``content[].text`` usually holds the tool's own JSON). Two rules, and nothing else, make
outputs that differ count as equal:

- **timestamps**: a date with a time of day (``2026-12-04 13:06:06``, ISO ``T`` and
  zone forms) is masked wherever it appears in a string; a bare date is data, kept;
- **generated ids**: where the recorded output holds the string X and the replay's holds
  Y at the same JSON path, both id-shaped (letters, digits, ``_.:-``, at least one letter
  and one digit, no spaces: a date or a number is never an id) and of the same shape (the same length and the same text before the first
  digit, or both hexadecimal), X maps to Y, one to one: X never maps to two ids, nor two
  ids to Y. Later calls' arguments get Y wherever they held X (as a whole word), and later
  outputs and the final state compare with X read as Y.

Numbers are never remapped (an integer id that differs is a difference).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from eog_core.state import table_state

__all__ = ["IdMap", "expand", "mask_times", "normalise_state"]

TIME_MASK = "<time>"
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_ID = re.compile(r"(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.:-]{2,79}")
_HEX = re.compile(r"[0-9a-fA-F-]{8,}")
_PREFIX = re.compile(r"\D*")


def mask_times(text: str) -> str:
    return _TIME.sub(TIME_MASK, text)


def expand(value: Any) -> Any:
    """``value`` with every string that holds a JSON object or array read as that JSON."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return expand(json.loads(stripped))
            except ValueError:
                return value
        return value
    if isinstance(value, Mapping):
        return {str(k): expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def _same_shape(recorded: str, replayed: str) -> bool:
    if not (_ID.fullmatch(recorded) and _ID.fullmatch(replayed)):
        return False
    if len(recorded) != len(replayed):
        return False
    if _HEX.fullmatch(recorded) and _HEX.fullmatch(replayed):
        return True
    prefix = _PREFIX.match(recorded)
    return prefix is not None and replayed.startswith(prefix.group())


@attrs.define
class IdMap:
    """Recorded id -> the replay's, learnt from outputs that differ only there."""

    ids: dict[str, str] = attrs.field(factory=dict)
    _pattern: re.Pattern[str] | None = attrs.field(default=None, repr=False)

    def learn(self, recorded: str, replayed: str) -> bool:
        """Map ``recorded`` to ``replayed`` if both are ids of one shape and neither is
        mapped otherwise already; whether they now correspond."""
        known = self.ids.get(recorded)
        if known is not None:
            return known == replayed
        if replayed in self.ids.values() or not _same_shape(recorded, replayed):
            return False
        self.ids[recorded] = replayed
        self._pattern = None
        return True

    def text(self, text: str) -> str:
        """``text`` with each recorded id (as a whole word) replaced by the replay's."""
        if not self.ids:
            return text
        if self._pattern is None:
            words = sorted(self.ids, key=len, reverse=True)
            self._pattern = re.compile(
                r"(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
            )
        return self._pattern.sub(lambda m: self.ids[m.group()], text)

    def value(self, value: Any) -> Any:
        """Every string of a JSON value (keys too) with the recorded ids replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def arguments(self, arguments: Any) -> Any:
        """A recorded call's arguments (a JSON object, or the text the model wrote) with the
        ids replaced; unchanged arguments are given back exactly as recorded."""
        if not self.ids:
            return arguments
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except ValueError:
                return arguments
            mapped = self.value(parsed)
            return arguments if mapped == parsed else json.dumps(mapped)
        return self.value(arguments)

    def compare(self, recorded: Any, replayed: Any, path: str = "$") -> list[str]:
        """The JSON paths where two (expanded) outputs differ after masking times and
        reading recorded ids as the replay's; learns new ids on the way."""
        if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
            keys = set(recorded) | set(replayed)
            if set(recorded) != set(replayed):
                return [f"{path}: keys {sorted(set(recorded) ^ set(replayed))} on one side only"]
            return [
                d
                for k in sorted(keys)
                for d in self.compare(recorded[k], replayed[k], f"{path}.{k}")
            ]
        if isinstance(recorded, list) and isinstance(replayed, list):
            if len(recorded) != len(replayed):
                return [f"{path}: {len(recorded)} items recorded, {len(replayed)} replayed"]
            return [
                d
                for i, (a, b) in enumerate(zip(recorded, replayed, strict=True))
                for d in self.compare(a, b, f"{path}[{i}]")
            ]
        if isinstance(recorded, str) and isinstance(replayed, str):
            if self.text(mask_times(recorded)) == mask_times(replayed):
                return []
            if self.learn(recorded, replayed):
                return []
            return [f"{path}: {recorded[:80]!r} recorded, {replayed[:80]!r} replayed"]
        if type(recorded) is type(replayed) and recorded == replayed:
            return []
        return [f"{path}: {recorded!r} recorded, {replayed!r} replayed"]


def normalise_state(document: Mapping[str, Any], ids: IdMap | None = None) -> Any:
    """A state document with its timestamps masked (and recorded ids read as the
    replay's), its rows sorted again (a remapped key may move a row)."""
    gyms = {}
    for gym, state in (document.get("gyms") or {}).items():
        tables = {}
        for name, table in state["tables"].items():
            rows = [
                {
                    c: (mask_times(ids.text(v) if ids else v) if isinstance(v, str) else v)
                    for c, v in row.items()
                }
                for row in table["rows"]
            ]
            tables[name] = table_state(table["columns"], table["primary_key"], rows)
        gyms[gym] = {"tables": tables}
    return {"format": document.get("format"), "gyms": gyms}
