"""May the gym's sql-runner cut a verifier query's answer? The shape of its outermost SELECT.

The real ``/api/sql-runner`` appends ``LIMIT 100`` to a query whose outermost
SELECT has no LIMIT of its own (reference, section 10), so a verifier reading a
list can be judged on a truncated one. A query is safe when its outermost SELECT
has a LIMIT, or is single-row shaped: no ``FROM``, an aggregate without
``GROUP BY``, or an equality on a key in its ``WHERE`` (a primary key or UNIQUE
column set from the DDL where the table is known; otherwise a column named
``*_id``, ``sys_id`` or ``number``). Subqueries, string literals and comments are
ignored; a compound SELECT is bounded arm by arm (``UNION`` adds, ``INTERSECT``
takes the least, ``EXCEPT`` the left), ``VALUES`` by its rows.
"""

from __future__ import annotations

import math
from functools import lru_cache

import attrs

from eog_core.certify._runner import ROW_CAP
from eog_core.certify._static_sql import Keys, Token, statements

__all__ = ["truncation_risk"]

_AGGREGATES = frozenset(
    {
        "COUNT",
        "SUM",
        "AVG",
        "MIN",
        "MAX",
        "TOTAL",
        "GROUP_CONCAT",
        "STRING_AGG",
        "JSON_GROUP_ARRAY",
        "JSON_GROUP_OBJECT",
        "JSONB_GROUP_ARRAY",
        "JSONB_GROUP_OBJECT",
    }
)
_COMPOUND = frozenset({"UNION", "INTERSECT", "EXCEPT"})
_CLAUSES = frozenset({"FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT"})
#: Words after a table in ``FROM`` that are not its alias.
_NOT_ALIASES = frozenset(
    {
        "ON",
        "USING",
        "JOIN",
        "LEFT",
        "RIGHT",
        "FULL",
        "INNER",
        "OUTER",
        "CROSS",
        "NATURAL",
        "INDEXED",
        "NOT",
        *_CLAUSES,
        *_COMPOUND,
    }
)
_HEURISTIC_KEYS = frozenset({"sys_id", "number"})


@attrs.frozen
class _Arm:
    """One SELECT of the outermost statement, as far as its row count goes."""

    single_row: bool  # no FROM, or an aggregate without GROUP BY
    tables: tuple[tuple[str, str | None], ...]  # (table, alias); "" for a subquery
    equalities: tuple[tuple[str | None, str], ...]  # (qualifier, column) = a value


@attrs.frozen
class _Shape:
    arms: tuple[_Arm, ...]
    operators: tuple[str, ...]  # between the arms: UNION, INTERSECT or EXCEPT
    rows: int | None = None  # VALUES: its row count


def _clause_starts(arm: tuple[Token, ...]) -> dict[str, int]:
    starts: dict[str, int] = {}
    for index, token in enumerate(arm):
        if token.depth == 0 and token.kind == "word" and token.upper in _CLAUSES:
            starts.setdefault(token.upper, index)
    return starts


def _section(arm: tuple[Token, ...], starts: dict[str, int], name: str) -> tuple[Token, ...]:
    """The tokens of clause ``name`` (after its keyword, up to the next clause)."""
    if name not in starts:
        return ()
    begin = starts[name] + 1
    later = [index for index in starts.values() if index > starts[name]]
    return arm[begin : min(later, default=len(arm))]


def _call_arguments(part: tuple[Token, ...], index: int) -> int:
    """Arguments of the call whose ``(`` is at ``index``."""
    depth, commas, argued = part[index].depth + 1, 0, False
    for token in part[index + 1 :]:
        if token.depth < depth:
            break
        argued = True
        commas += token.depth == depth and token.text == ","
    return commas + 1 if argued else 0


def _aggregate(columns: tuple[Token, ...]) -> bool:
    """An aggregate call in the result columns, outside subqueries and not a window."""
    for index, token in enumerate(columns[:-1]):
        if token.depth or token.kind != "word" or token.upper not in _AGGREGATES:
            continue
        if columns[index + 1].text != "(":
            continue
        arguments = _call_arguments(columns, index + 1)
        if token.upper in ("MIN", "MAX") and arguments > 1:
            continue  # min(a, b): the scalar function
        close = next(
            (i for i in range(index + 2, len(columns)) if columns[i].depth == 0), len(columns)
        )
        if close + 1 < len(columns) and columns[close + 1].is_word("FILTER"):
            close = next(
                (i for i in range(close + 3, len(columns)) if columns[i].depth == 0), close
            )
        if close + 1 < len(columns) and columns[close + 1].is_word("OVER"):
            continue  # a window function: one row per input row
        return True
    return False


def _tables(section: tuple[Token, ...]) -> tuple[tuple[str, str | None], ...]:
    """The tables of a ``FROM`` clause with their aliases (a subquery's table is "")."""
    found: list[tuple[str, str | None]] = []
    expecting = True
    index = 0
    while index < len(section):
        token = section[index]
        if token.depth:
            index += 1
            continue
        if token.text == "," or token.is_word("JOIN"):
            expecting = True
        elif token.is_word("ON", "USING"):
            expecting = False
        elif expecting and (token.kind in ("word", "identifier") or token.text == "("):
            table = "" if token.text == "(" else token.name
            index += 1
            while index < len(section) and section[index].depth:
                index += 1  # a subquery, or a table-valued function's arguments
            if index < len(section) and section[index].text in (".", ")"):
                index += 1
                if section[index - 1].text == "." and index < len(section):
                    table = section[index].name
                    index += 1
            alias = None
            if index < len(section) and section[index].is_word("AS"):
                index += 1
            if index < len(section) and section[index].depth == 0:
                following = section[index]
                if following.kind == "identifier" or (
                    following.kind == "word" and following.upper not in _NOT_ALIASES
                ):
                    alias = following.name
                    index += 1
            found.append((table, alias))
            expecting = False
            continue
        index += 1
    return tuple(found)


def _is_value(tokens: tuple[Token, ...], index: int) -> bool:
    """Whether a literal or a parenthesized expression starts at ``index``."""
    if index >= len(tokens):
        return False
    token = tokens[index]
    if token.text in ("-", "+") and index + 1 < len(tokens):
        token = tokens[index + 1]
    return token.kind in ("string", "number", "blob") or token.text == "("


def _column_before(tokens: tuple[Token, ...], index: int) -> tuple[str | None, str] | None:
    """The ``[qualifier.]column`` ending just before ``index``."""
    if index < 1 or tokens[index - 1].kind not in ("word", "identifier"):
        return None
    column = tokens[index - 1].name
    if index >= 3 and tokens[index - 2].text == "." and tokens[index - 3].depth == 0:
        return tokens[index - 3].name, column
    if index >= 2 and tokens[index - 2].is_word("NOT"):
        return None
    return None, column


def _equalities(where: tuple[Token, ...]) -> tuple[tuple[str | None, str], ...]:
    """``column = value`` (either way round) joined by ``AND`` at the top of a WHERE."""
    top = [token for token in where if token.depth == 0]
    if any(token.is_word("OR") for token in top):
        return ()
    found = []
    for index, token in enumerate(where):
        if token.depth or token.text not in ("=", "=="):
            continue
        left = _column_before(where, index)
        if left and _is_value(where, index + 1):
            found.append(left)
        elif index + 1 < len(where) and where[index + 1].kind in ("word", "identifier"):
            after = index + 2
            if after + 1 < len(where) and where[after].text == ".":
                after += 2
            right = _column_before(where, after)
            value_before = index >= 1 and (
                where[index - 1].kind in ("string", "number", "blob")
                or where[index - 1].text == ")"
            )
            if right and value_before:
                found.append(right)
    return tuple(found)


def _arm(arm: tuple[Token, ...]) -> _Arm:
    starts = _clause_starts(arm)
    columns = arm[1 : starts.get("FROM", len(arm))]
    single = "FROM" not in starts or ("GROUP" not in starts and _aggregate(columns))
    return _Arm(
        single_row=single,
        tables=_tables(_section(arm, starts, "FROM")),
        equalities=_equalities(_section(arm, starts, "WHERE")),
    )


@lru_cache(maxsize=8192)
def _shape(query: str) -> _Shape | None:
    """The outermost SELECT's arms; None when it has a LIMIT or is not one SELECT."""
    parts = statements(query)
    if len(parts) != 1:
        return None
    statement = parts[0]
    start = 0
    if statement[0].is_word("WITH"):
        start = next(
            (i for i, t in enumerate(statement) if t.depth == 0 and t.is_word("SELECT", "VALUES")),
            len(statement),
        )
    main = statement[start:]
    if not main or any(t.depth == 0 and t.is_word("LIMIT") for t in main):
        return None
    if main[0].is_word("VALUES"):
        rows = 1 + sum(1 for t in main if t.depth == 0 and t.text == ",")
        return _Shape(arms=(), operators=(), rows=rows)
    if not main[0].is_word("SELECT"):
        return None
    arms: list[tuple[Token, ...]] = []
    operators: list[str] = []
    begin = 0
    for index, token in enumerate(main):
        if token.depth == 0 and token.kind == "word" and token.upper in _COMPOUND:
            arms.append(main[begin:index])
            operators.append(token.upper)
            begin = index + 1 + (index + 1 < len(main) and main[index + 1].is_word("ALL"))
    arms.append(main[begin:])
    return _Shape(arms=tuple(_arm(arm) for arm in arms if arm), operators=tuple(operators))


def _pinned(arm: _Arm, keys: Keys | None) -> bool:
    """Whether an equality in the WHERE pins one row of a table by a key."""
    if not arm.equalities:
        return False
    by_alias = {alias: table for table, alias in arm.tables if alias}
    names = {table for table, _ in arm.tables}
    pinned: dict[str, set[str]] = {}
    for qualifier, column in arm.equalities:
        if qualifier is not None:
            table = by_alias.get(qualifier, qualifier if qualifier in names else "")
        elif len(arm.tables) == 1:
            table = arm.tables[0][0]
        else:
            table = next(
                (
                    t
                    for t, _ in arm.tables
                    if keys and any(column in key for key in keys.get(t, ()))
                ),
                "",
            )
        if keys is not None and table in keys:
            pinned.setdefault(table, set()).add(column)
            if any(key and key <= pinned[table] for key in keys[table]):
                return True
        elif column.endswith("_id") or column in _HEURISTIC_KEYS:
            return True
    return False


def _bound(arm: _Arm, keys: Keys | None) -> float:
    return 1 if arm.single_row or _pinned(arm, keys) else math.inf


def truncation_risk(query: str, keys: Keys | None = None) -> bool:
    """Whether the gym's silent ``LIMIT 100`` may cut ``query``'s answer (see the module
    docstring); ``keys``: the keys of the tables the query reads, where known."""
    shape = _shape(query)
    if shape is None:
        return False
    if shape.rows is not None:
        return shape.rows > ROW_CAP
    rows = _bound(shape.arms[0], keys) if shape.arms else 0
    for operator, arm in zip(shape.operators, shape.arms[1:], strict=False):
        bound = _bound(arm, keys)
        if operator == "UNION":
            rows += bound
        elif operator == "INTERSECT":
            rows = min(rows, bound)
    return rows > ROW_CAP
