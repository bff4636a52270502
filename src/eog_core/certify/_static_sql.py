"""What a verifier query's text says before it runs: SQLite's tokens, whether SQLite can
parse it, whether it reads the clock, and which keys a seed's DDL declares.

The tokens follow SQLite's tokenizer rules (``tokenize.c``): ``'...'`` strings with
``''`` doubling, ``"..."``, ``[...]`` and ```...``` identifiers, ``--`` and ``/* */``
comments, ``x'..'`` blobs. Unlike strict verify's read-only check these functions
only describe a query, never let one run: a character SQLite would refuse is kept
as an ``other`` token, and the parse itself is left to SQLite. Every answer is cached
by the query's text (the same verifier SQL recurs across modes and copies of a task).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple

import attrs

__all__ = [
    "Keys",
    "Token",
    "clock_reads",
    "ddl_keys",
    "parse_problem",
    "statements",
    "tokens",
]

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\n\v\f\r]+)
  | (?P<comment>--[^\n]*|/\*(?:.|\n)*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*'?)
  | (?P<identifier>"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?)
  | (?P<blob>[xX]'[^']*'?)
  | (?P<word>[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*)
  | (?P<number>0[xX][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?)
  | (?P<operator>->>|->|<=|>=|==|!=|<>|<<|>>|\|\||[-+*/%<>=~&|(),.;])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Token(NamedTuple):
    """One token: ``kind`` (word, string, identifier, blob, number, operator, other),
    its ``text`` as written, its paren ``depth`` and its ``start`` offset in the query."""

    kind: str
    text: str
    depth: int
    start: int

    @property
    def upper(self) -> str:
        return self.text.upper()

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words

    @property
    def name(self) -> str:
        """A word or quoted identifier as SQLite names it: unquoted, lower case."""
        if self.kind == "identifier":
            quote = self.text[0]
            inner = self.text[1:-1] if len(self.text) > 1 else ""
            return inner if quote == "[" else inner.replace(quote * 2, quote).lower()
        return self.text.lower()


@lru_cache(maxsize=8192)
def tokens(query: str) -> tuple[Token, ...]:
    """The query's tokens without spaces and comments; ``;`` kept as an operator."""
    found: list[Token] = []
    depth = 0
    for match in _TOKEN.finditer(query):
        kind = match.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        text = match.group()
        if text == ")":
            depth = max(depth - 1, 0)
        found.append(Token(kind, text, depth, match.start()))
        if text == "(":
            depth += 1
    return tuple(found)


@lru_cache(maxsize=8192)
def statements(query: str) -> tuple[tuple[Token, ...], ...]:
    """The query's non-empty statements, split at ``;`` outside strings and comments."""
    parts: list[list[Token]] = [[]]
    for token in tokens(query):
        if token.kind == "operator" and token.text == ";":
            parts.append([])
        else:
            parts[-1].append(token)
    return tuple(tuple(part) for part in parts if part)


#: SQLite's messages for text it could not parse (anything else, such as ``no such
#: table``, is raised after the parse succeeded).
_PARSE_ERRORS = ("syntax error", "incomplete input", "unrecognized token", "parser stack overflow")


@lru_cache(maxsize=8192)
def parse_problem(query: str) -> str | None:
    """SQLite's parse error for ``query`` (None when every statement parses).

    Each statement is compiled as ``EXPLAIN <statement>`` on an empty in-memory
    database: it is parsed whole before any name is resolved, so ``no such table``
    means the text parsed, while ``syntax error``, ``incomplete input`` and
    ``unrecognized token`` mean it did not. ``EXPLAIN`` only lists the program,
    nothing runs.
    """
    if "\x00" in query:
        return "the query holds a NUL character"
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the query is not UTF-8 text ({exc.reason} at character {exc.start})"
    parts = statements(query)
    if not parts:
        return "the query is empty"
    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        ends = [part[-1].start + len(part[-1].text) for part in parts]
        for part, end in zip(parts, ends, strict=True):
            text = query[part[0].start : end]
            explain = "" if part[0].is_word("EXPLAIN") else "EXPLAIN "
            try:
                connection.execute(explain + text).fetchall()
            except sqlite3.Error as exc:
                message = str(exc)
                if any(error in message for error in _PARSE_ERRORS):
                    where = f" (statement {parts.index(part) + 1})" if len(parts) > 1 else ""
                    return f"SQLite cannot parse it{where}: {message}"
    finally:
        connection.close()
    return None


#: SQLite's date and time functions; called with no time value they read the clock.
_DATE_FUNCTIONS = frozenset({"DATE", "TIME", "DATETIME", "JULIANDAY", "UNIXEPOCH", "STRFTIME"})
_CLOCK_WORDS = frozenset({"CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP"})


@attrs.define
class _Call:
    """An open parenthesis while scanning: the function it calls (None: a plain group)."""

    function: str | None
    commas: int = 0
    argued: bool = False

    @property
    def arguments(self) -> int:
        return self.commas + 1 if self.argued else 0


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'") if len(text) > 1 and text.endswith("'") else text[1:]


@lru_cache(maxsize=8192)
def clock_reads(query: str) -> tuple[str, ...]:
    """How ``query`` reads the clock, one phrase per read (empty: it does not).

    ``CURRENT_DATE``, ``CURRENT_TIME`` and ``CURRENT_TIMESTAMP`` as keywords (not
    quoted, not a column after ``.``); ``'now'`` as an argument of a date function;
    ``date()``, ``datetime()``, ``julianday()``... with no time value, and
    ``strftime(format)``, which SQLite reads as now. A string ``'now'`` elsewhere, a
    word such as ``knowledge`` or a column ``now_playing`` is not the clock.
    """
    found: list[str] = []
    all_tokens = tokens(query)
    calls: list[_Call] = []  # one per open paren
    for index, token in enumerate(all_tokens):
        previous = all_tokens[index - 1] if index else None
        operator = token.text if token.kind == "operator" else None
        if operator == "(":
            is_call = previous is not None and previous.kind == "word"
            calls.append(_Call(previous.upper if previous and is_call else None))
            continue
        if operator == ")":
            call = calls.pop() if calls else None
            no_time_value = call is not None and call.arguments <= (call.function == "STRFTIME")
            if call and call.function in _DATE_FUNCTIONS and no_time_value:
                found.append(f"{call.function.lower()}() with no time value")
            continue
        if calls:
            calls[-1].argued = True
            calls[-1].commas += operator == ","
        after_dot = previous is not None and previous.text == "."
        if token.kind == "word" and token.upper in _CLOCK_WORDS and not after_dot:
            found.append(token.upper)
        elif token.kind == "string" and _unquote(token.text).strip().lower() == "now":
            function = calls[-1].function if calls else None
            if function in _DATE_FUNCTIONS:
                found.append(f"{str(function).lower()}({token.text})")
    return tuple(found)


#: Per table (lower case): its keys, each the set of columns (lower case) it is made of.
Keys = Mapping[str, tuple[frozenset[str], ...]]

_CREATE_TABLE = re.compile(
    r"(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z))*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TABLE\b",
    re.IGNORECASE | re.DOTALL,
)


def _create_statements(ddl: str) -> list[str]:
    """The ``CREATE TABLE`` statements of ``ddl`` (a seed file may also hold data): the
    text is cut at each ``;`` that ends a complete statement (SQLite's own test, so a
    ``;`` or a ``CREATE TABLE`` inside a string literal is not taken for one)."""
    found = []
    start = 0
    end = ddl.find(";")
    while end >= 0:
        statement = ddl[start : end + 1]
        if sqlite3.complete_statement(statement):
            if _CREATE_TABLE.match(statement):
                found.append(statement)
            start = end + 1
        end = ddl.find(";", end + 1)
    if _CREATE_TABLE.match(ddl, start):
        found.append(ddl[start:])
    return found


@lru_cache(maxsize=64)
def ddl_keys(ddl: str) -> Keys:
    """The primary keys and UNIQUE column sets of the tables ``ddl`` creates.

    The ``CREATE TABLE`` statements are run on an empty in-memory database and SQLite
    is asked (``PRAGMA table_info``, ``index_list``): a statement it refuses is
    skipped. A table without a declared key has none.
    """
    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in _create_statements(ddl):
            try:
                connection.execute(statement)
            except sqlite3.Error:
                continue
        keys: dict[str, tuple[frozenset[str], ...]] = {}
        names = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        for (table,) in names.fetchall():
            quoted = '"' + table.replace('"', '""') + '"'
            info = connection.execute(f"PRAGMA table_info({quoted})").fetchall()
            primary = frozenset(row[1].lower() for row in info if row[5])
            found = [primary] if primary else []
            for index in connection.execute(f"PRAGMA index_list({quoted})").fetchall():
                if index[2]:  # unique
                    name = '"' + index[1].replace('"', '""') + '"'
                    columns = connection.execute(f"PRAGMA index_info({name})").fetchall()
                    found.append(frozenset(row[2].lower() for row in columns if row[2]))
            keys[table.lower()] = tuple(dict.fromkeys(found))
        return keys
    finally:
        connection.close()
