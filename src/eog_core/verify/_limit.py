"""The real gyms' silent ``LIMIT 100``: which query a gym's ``/api/sql-runner`` actually runs.

A real EOG gym appends ``LIMIT 100`` to a query without a LIMIT of its own and
says so only in the ``query`` field of its answer (``agentrelbench`` 0.1.0,
``state_export.py``; docs/parity.md, "The sql-runner's LIMIT 100"). Upstream's
verifiers read their lists through that endpoint, so a verifier can be judged on
100 rows of 150. :func:`apply_implicit_limit` is that rule as a pure function:
LocalGym runs it, ``SqliteSqlRunner(implicit_limit=...)`` applies it offline and
strict scoring uses it to tell a possibly truncated answer.

"Its own LIMIT" is read as a LIMIT of the outermost statement: one in a
subquery, a CTE body, a string literal, a quoted identifier or a comment does
not count. The query is read with SQLite's tokenizer rules (as
``_readonly.py`` reads it), in one linear pass.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = [
    "GYM_IMPLICIT_LIMIT",
    "TRUNCATED",
    "apply_implicit_limit",
    "implicit_limit_of",
    "truncation_problem",
]

#: How strict's error for an answer the gym may have cut begins.
TRUNCATED = "possibly truncated by the gym's LIMIT"

#: The row cap a real gym's sql-runner puts on a query without a LIMIT of its own.
GYM_IMPLICIT_LIMIT = 100

_SPACE = re.compile(r"[ \t\n\v\f\r]+")
_WORD = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*")
_CLOSERS = {"'": "'", '"': '"', "`": "`", "[": "]"}
#: The words that make the outermost statement a query or a write (after ``WITH``'s CTEs).
_MAIN_VERBS = frozenset({"SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE"})
#: A word after one of these is a name (``t.limit``) or a parameter (``:limit``), not a keyword.
_NAME_PREFIXES = frozenset(".:@$#")


def _quoted_end(query: str, start: int) -> int:
    """The index after the quoted token opening at ``start``, or -1 when it never closes."""
    closer = _CLOSERS[query[start]]
    index = start + 1
    while True:
        end = query.find(closer, index)
        if end < 0:
            return -1
        if closer != "]" and query.startswith(closer * 2, end):
            index = end + 2  # a doubled quote stands for itself
            continue
        return end + 1


def _insertion_point(query: str) -> int | None:
    """Where `` LIMIT n`` goes (after the statement's last token), or None to leave the query.

    None when the outermost statement has a LIMIT, is not a query, ends in a
    ``VALUES`` list (which takes no LIMIT), is followed by another statement, or cannot be
    read (an unterminated quote: SQLite rejects it anyway).
    """
    depth = 0
    first: str | None = None
    verb: str | None = None
    last_core: str | None = None  # the last compound member's SELECT or VALUES
    previous = ""  # the last significant token, for ``name.limit`` and ``replace(``
    end_of_statement = 0
    ended = False
    index, length = 0, len(query)
    while index < length:
        char = query[index]
        if match := _SPACE.match(query, index):
            index = match.end()
            continue
        if query.startswith("--", index):
            newline = query.find("\n", index)
            index = length if newline < 0 else newline + 1
            continue
        if query.startswith("/*", index):
            close = query.find("*/", index + 2)
            index = length if close < 0 else close + 2  # SQLite ends an open comment at the end
            continue
        if char == ";":
            ended = True
            index += 1
            continue
        if ended:
            return None  # a second statement after the ';'
        token_end = index + 1
        if char in _CLOSERS:
            token_end = _quoted_end(query, index)
            if token_end < 0:
                return None
            previous = "quoted"
        elif match := _WORD.match(query, index):
            token_end = match.end()
            word = match.group().upper()
            if depth == 0 and previous not in _NAME_PREFIXES:
                if word == "LIMIT":
                    return None
                if verb is None and word in _MAIN_VERBS:
                    follows = _SPACE.match(query, token_end)
                    after = follows.end() if follows else token_end
                    if not (word == "REPLACE" and query.startswith("(", after)):
                        verb = word
                if word in ("SELECT", "VALUES"):
                    last_core = word
            previous = word
        else:
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(0, depth - 1)
            previous = char
        if first is None:
            first = query[index:token_end].upper()
        end_of_statement = index = token_end
    if first not in ("SELECT", "VALUES", "WITH") or verb not in ("SELECT", "VALUES"):
        return None
    if last_core != "SELECT":
        return None  # SQLite takes no LIMIT after a VALUES list
    return end_of_statement


@lru_cache(maxsize=4096)
def _capped(query: str, limit: int) -> str:
    point = _insertion_point(query)
    if point is None:
        return query
    return f"{query[:point]} LIMIT {limit}{query[point:]}"


def apply_implicit_limit(query: str, limit: int = GYM_IMPLICIT_LIMIT) -> str:
    """``query`` as a real gym's sql-runner runs it: `` LIMIT <limit>`` appended when the
    outermost SELECT has no LIMIT of its own; otherwise ``query`` unchanged.

    The LIMIT goes right after the statement's last token, so a trailing ``;``,
    whitespace and comments stay where they were (``SELECT * FROM t; -- all`` becomes
    ``SELECT * FROM t LIMIT 100; -- all``). A LIMIT inside a subquery, a CTE body, a
    string literal, a quoted identifier or a comment is not the query's own; a
    compound SELECT (``UNION``) has one LIMIT, for the whole. Left unchanged: a
    statement that is not a query (``SELECT``, ``VALUES``, a ``WITH`` ending in one), a
    query ending in a ``VALUES`` list (SQLite takes no LIMIT there), more
    than one statement, an unterminated quote. Cached: the same verifier
    queries are read once per process.
    """
    if type(limit) is not int or limit < 0:
        raise ValueError(f"limit must be a whole number of rows (0 or more), got {limit!r}")
    return _capped(query, limit)


def implicit_limit_of(runner: object) -> int | None:
    """The row cap a :class:`SqlRunner`'s answers are subject to (its ``implicit_limit``
    attribute), or None for a runner that declares none (it answers every row)."""
    limit = getattr(runner, "implicit_limit", None)
    return limit if type(limit) is int and limit >= 0 else None


def truncation_problem(query: str, body: Any, limit: int) -> str | None:
    """Why an answer of a runner capped at ``limit`` rows cannot be trusted, or None.

    A query without a LIMIT of its own that came back with exactly ``limit`` rows
    may have been cut short by the gym: its true answer may hold more.
    """
    rows = body.get("data", body.get("rows")) if isinstance(body, dict) else None
    if not isinstance(rows, list) or len(rows) != limit:
        return None
    if apply_implicit_limit(query, limit) == query:
        return None
    return (
        f"{TRUNCATED} {limit}: the query has no LIMIT of its own "
        f"and came back with exactly {limit} rows (the gym cuts such answers at {limit}; "
        "give the query a LIMIT, or count the rows)"
    )
