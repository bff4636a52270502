"""A row-level diff of two canonical state documents (``eog-state/1``), keyed by primary key.

Rows of a table with a primary key match by its value (all its columns, in the
order the table declares them): a key only before is ``removed``, only after
``added``, on both sides with a different non-volatile column ``modified``. A
table without a primary key matches whole rows as a multiset (volatile columns
masked): surplus copies before are ``removed``, after ``added``, nothing is ever
``modified`` (a keyless row has no identity to carry a change). Volatile columns
(wall-clock stamps a tool writes on every call) are masked by name rule and by a
per-domain list, never by value. Values compare with their JSON type: ``1`` and
``1.0`` differ, as the state's hash does (docs/state.md, "Collateral damage").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from eog_core.errors import SchemaError

__all__ = [
    "DOMAIN_VOLATILE_COLUMNS",
    "VOLATILE_COLUMN_RULE",
    "RowChange",
    "StateDiff",
    "diff_states",
    "volatile_columns",
]

Op = Literal["added", "removed", "modified"]

#: Column names masked in every domain: ServiceNow-style stamps (``sys_created_on``,
#: ``sys_updated_on``, ``sys_mod_count``), ``created_on``/``updated_on``/``modified_on``, and any
#: name ending in ``_at`` (``created_at``, ``updated_at``, ``started_at``...).
VOLATILE_COLUMN_RULE = re.compile(
    r"(?:sys_)?(?:created|updated|modified)_on|sys_mod_count|[a-z0-9_]*_at", re.IGNORECASE
)

#: Per domain, per table: volatile columns the rule does not catch (agentrelbench 0.1.0's
#: audit of the gyms' writes found ``case_sla.start_time`` stamped with the wall clock).
DOMAIN_VOLATILE_COLUMNS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "csm": {"case_sla": ("start_time",)},
}

_MISSING = object()  # a column one side of a row does not have


@attrs.frozen(kw_only=True)
class RowChange:
    """One changed row: ``key`` maps the primary-key columns to the row's values (None for a
    table without a primary key); ``columns`` are the changed non-volatile columns (modified
    only); ``before``/``after`` are the whole rows as the documents hold them (None on the
    side where the row does not exist)."""

    gym: str
    table: str
    op: Op
    key: Mapping[str, Any] | None
    columns: tuple[str, ...] = ()
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None

    @property
    def row(self) -> Mapping[str, Any]:
        """The row a rule's ``where`` reads: the new row (added, modified), else the old one."""
        row = self.after if self.after is not None else self.before
        assert row is not None
        return row

    def sort_key(self) -> tuple[str, str, str, str]:
        """Gym, table, op, then the key as ``str`` of its value (the tuple of values for a
        composite key): agentrelbench's order, so sums of dollars add up in the same order."""
        if self.key is None:
            shown = repr(sorted(self.row.items()))
        else:
            values = tuple(self.key.values())
            shown = str(values[0] if len(values) == 1 else values)
        return (self.gym, self.table, self.op, shown)

    def to_dict(self) -> dict[str, Any]:
        """``{gym, table, op, key, columns, before, after}``: for a modified row ``before`` and
        ``after`` hold only the changed columns; an added row has only ``after``, a removed
        one only ``before`` (the whole row)."""
        out: dict[str, Any] = {
            "gym": self.gym,
            "table": self.table,
            "op": self.op,
            "key": None if self.key is None else dict(self.key),
            "columns": list(self.columns),
        }
        if self.op == "modified":
            assert self.before is not None and self.after is not None
            out["before"] = {c: self.before.get(c) for c in self.columns}
            out["after"] = {c: self.after.get(c) for c in self.columns}
        elif self.op == "added":
            out["after"] = dict(self.row)
        else:
            out["before"] = dict(self.row)
        return out


@attrs.frozen(kw_only=True)
class StateDiff:
    """Every changed row of a rollout, in :meth:`RowChange.sort_key` order."""

    changes: tuple[RowChange, ...]

    def __bool__(self) -> bool:
        return bool(self.changes)

    def to_list(self) -> list[dict[str, Any]]:
        return [change.to_dict() for change in self.changes]


def volatile_columns(
    table: str,
    columns: Iterable[str],
    *,
    domain: str | None = None,
    extra: Mapping[str, Iterable[str]] | None = None,
) -> frozenset[str]:
    """The columns of ``table`` masked: by :data:`VOLATILE_COLUMN_RULE`, by the domain's list
    in :data:`DOMAIN_VOLATILE_COLUMNS`, and by ``extra`` (``{table: [columns]}``)."""
    listed = set(DOMAIN_VOLATILE_COLUMNS.get(domain or "", {}).get(table, ()))
    listed.update((extra or {}).get(table, ()))
    return frozenset(c for c in columns if c in listed or VOLATILE_COLUMN_RULE.fullmatch(c))


def diff_states(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    domain: str | None = None,
    volatile: Mapping[str, Iterable[str]] | None = None,
) -> StateDiff:
    """The row-level diff of two ``eog-state/1`` documents, per gym and table.

    A gym or table on one side only has all its rows added (or removed). A table's key is
    the ``primary_key`` of its ``before`` side when it has one there, else of ``after``.
    ``volatile`` adds masked columns per table name (every gym) to the rule and the
    ``domain``'s list. A document of another format is a SchemaError.
    """
    changes: list[RowChange] = []
    gyms_before = _gyms(before, "before")
    gyms_after = _gyms(after, "after")
    for gym in sorted(set(gyms_before) | set(gyms_after)):
        tables_before = gyms_before.get(gym, {})
        tables_after = gyms_after.get(gym, {})
        for table in sorted(set(tables_before) | set(tables_after)):
            old = tables_before.get(table)
            new = tables_after.get(table)
            columns = [*(old or {}).get("columns", ()), *(new or {}).get("columns", ())]
            masked = volatile_columns(table, columns, domain=domain, extra=volatile)
            key = list((old if old is not None else new or {}).get("primary_key") or ())
            rows_old = list((old or {}).get("rows", ()))
            rows_new = list((new or {}).get("rows", ()))
            if key:
                changes.extend(_keyed(gym, table, key, rows_old, rows_new, masked))
            else:
                changes.extend(_keyless(gym, table, rows_old, rows_new, masked))
    changes.sort(key=RowChange.sort_key)
    return StateDiff(changes=tuple(changes))


def _gyms(document: Mapping[str, Any], side: str) -> Mapping[str, Mapping[str, Any]]:
    if document.get("format") != "eog-state/1":
        raise SchemaError(f"the {side} state is not an eog-state/1 document", path="$.format")
    return {gym: body.get("tables", {}) for gym, body in document.get("gyms", {}).items()}


def _keyed(
    gym: str,
    table: str,
    key: list[str],
    rows_old: list[Mapping[str, Any]],
    rows_new: list[Mapping[str, Any]],
    masked: frozenset[str],
) -> Iterable[RowChange]:
    def by_key(rows: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        return {_token(tuple(row.get(c) for c in key)): row for row in rows}

    old, new = by_key(rows_old), by_key(rows_new)

    def key_of(row: Mapping[str, Any]) -> dict[str, Any]:
        return {c: row.get(c) for c in key}

    for token, row in old.items():
        if token not in new:
            yield RowChange(gym=gym, table=table, op="removed", key=key_of(row), before=row)
    for token, row in new.items():
        if token not in old:
            yield RowChange(gym=gym, table=table, op="added", key=key_of(row), after=row)
        else:
            changed = changed_columns(old[token], row, masked)
            if changed:
                yield RowChange(
                    gym=gym,
                    table=table,
                    op="modified",
                    key=key_of(row),
                    columns=changed,
                    before=old[token],
                    after=row,
                )


def _keyless(
    gym: str,
    table: str,
    rows_old: list[Mapping[str, Any]],
    rows_new: list[Mapping[str, Any]],
    masked: frozenset[str],
) -> Iterable[RowChange]:
    def tokens(rows: list[Mapping[str, Any]]) -> tuple[Counter[str], dict[str, list[Any]]]:
        counts: Counter[str] = Counter()
        examples: dict[str, list[Any]] = {}
        for row in rows:
            token = _token(sorted((c, v) for c, v in row.items() if c not in masked))
            counts[token] += 1
            examples.setdefault(token, []).append(row)
        return counts, examples

    count_old, rows_by_old = tokens(rows_old)
    count_new, rows_by_new = tokens(rows_new)
    for token, surplus in (count_old - count_new).items():
        for row in rows_by_old[token][-surplus:]:
            yield RowChange(gym=gym, table=table, op="removed", key=None, before=row)
    for token, surplus in (count_new - count_old).items():
        for row in rows_by_new[token][-surplus:]:
            yield RowChange(gym=gym, table=table, op="added", key=None, after=row)


def changed_columns(
    old: Mapping[str, Any], new: Mapping[str, Any], masked: frozenset[str]
) -> tuple[str, ...]:
    """Sorted non-masked columns whose value (with its JSON type) differs; a column on one side
    only counts as changed."""
    columns = (set(old) | set(new)) - masked
    return tuple(
        sorted(c for c in columns if not _same(old.get(c, _MISSING), new.get(c, _MISSING)))
    )


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _token(value: Any) -> str:
    """A hashable spelling of JSON values that keeps their types apart (``1`` vs ``1.0``)."""
    return repr(_typed(value))


def _typed(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_typed(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((k, _typed(v)) for k, v in value.items()))
    return (type(value).__name__, value)
