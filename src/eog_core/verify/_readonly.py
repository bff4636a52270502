"""Is a verifier query one read-only statement? A conservative check on SQLite's own tokens.

STRICT refuses a verifier query unless it is exactly one statement that starts
with ``SELECT``, ``WITH`` or ``VALUES`` and holds no data-changing keyword
outside string literals. Remote gyms run the query on databases we do not
control, so the check must never read text the way SQLite does not: the query is
split with SQLite's tokenizer rules (``tokenize.c``): ``'...'`` strings with
``''`` doubling and no backslash escapes; ``"..."``, ``[...]`` and ```...```
identifiers; ``--`` and ``/* */`` comments; ``x'..'`` blobs. Whatever SQLite
itself would reject or read differently (parameters and variables such as
``$x`` or ``?``, unterminated quotes, stray characters, NUL) is refused too, so
an ambiguity can only refuse a query, never let one through. The scan is linear
and iterative: no token count or nesting limit (sqlparse's 10,000 tokens and
100 levels) applies.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["READ_ONLY_STARTS", "WRITE_WORDS", "read_only_problem"]

#: The keywords a read-only statement may start with.
READ_ONLY_STARTS = frozenset({"SELECT", "WITH", "VALUES"})

#: Words refused anywhere outside string literals and quoted identifiers: every
#: statement that changes data, schema, attached files, settings or transactions,
#: the clauses only such statements have, and functions with side effects.
#: ``REPLACE`` followed by ``(`` is the string function and is allowed.
WRITE_WORDS = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "UPSERT",
        "MERGE",
        "TRUNCATE",
        "CREATE",
        "DROP",
        "ALTER",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "REINDEX",
        "ANALYZE",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "TRANSACTION",
        "INTO",
        "CONFLICT",
        "RETURNING",
        "LOAD_EXTENSION",
        "FTS3_TOKENIZER",
        "WRITEFILE",
    }
)

_SPACE = re.compile(r"[ \t\n\v\f\r]+")
_WORD = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*")
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?"
)
_BLOB = re.compile(r"[xX]'(?:[0-9a-fA-F]{2})*'")
_ID_CHAR = re.compile(r"[A-Za-z0-9_$\u0080-\U0010ffff]")
_PUNCTUATION = frozenset("(),.+-*/%<>=!|&~")
_VARIABLE_STARTS = frozenset("?$@:#")
_CLOSERS = {"'": "'", '"': '"', "`": "`"}


class _Refused(Exception):
    """The query cannot be shown to be read-only; the message says why."""


def _quoted_end(query: str, start: int) -> int:
    """The index after the quoted token opening at ``start`` (``'x''y'``, ``"a"``, ```b```, ``[c]``)."""
    opener = query[start]
    if opener == "[":
        end = query.find("]", start + 1)
        if end < 0:
            raise _Refused("the query has an unterminated [identifier]")
        return end + 1
    closer = _CLOSERS[opener]
    index = start + 1
    while True:
        end = query.find(closer, index)
        if end < 0:
            what = "string literal" if opener == "'" else "quoted identifier"
            raise _Refused(f"the query has an unterminated {what}")
        if query.startswith(closer * 2, end):
            index = end + 2  # a doubled quote stands for itself
            continue
        return end + 1


def _statements(query: str) -> list[list[tuple[str, str]]]:
    """The query's statements, each a list of ``(kind, text)`` tokens without comments or spaces."""
    statements: list[list[tuple[str, str]]] = [[]]
    index, length = 0, len(query)
    while index < length:
        char = query[index]
        if match := _SPACE.match(query, index):
            index = match.end()
        elif query.startswith("--", index):
            end = query.find("\n", index)
            index = length if end < 0 else end + 1
        elif query.startswith("/*", index):
            end = query.find("*/", index + 2)
            index = length if end < 0 else end + 2  # SQLite ends an open comment at the end
        elif char in "'\"`[":
            end = _quoted_end(query, index)
            statements[-1].append(("string" if char == "'" else "identifier", query[index:end]))
            index = end
        elif char in "xX" and query.startswith("'", index + 1):
            if not (match := _BLOB.match(query, index)):
                raise _Refused("the query has a malformed blob literal")
            statements[-1].append(("blob", match.group()))
            index = match.end()
        elif match := _WORD.match(query, index):
            statements[-1].append(("word", match.group()))
            index = match.end()
        elif match := _NUMBER.match(query, index):
            if _ID_CHAR.match(query, match.end()):
                raise _Refused(
                    f"the query has a malformed number near {query[index : match.end() + 1]!r}"
                )
            statements[-1].append(("number", match.group()))
            index = match.end()
        elif char == ";":
            statements.append([])
            index += 1
        elif char in _PUNCTUATION:
            statements[-1].append(("punctuation", char))
            index += 1
        elif char in _VARIABLE_STARTS:
            raise _Refused(
                f"the query uses a parameter or variable ({char!r}); a verifier query binds none"
            )
        else:
            raise _Refused(
                f"the query holds a character SQLite cannot read outside a string ({char!r})"
            )
    return [statement for statement in statements if statement]


def _write_word(tokens: list[tuple[str, str]]) -> str | None:
    for position, (kind, text) in enumerate(tokens):
        if kind != "word" or not text.isascii():
            continue
        word = text.upper()
        if word not in WRITE_WORDS:
            continue
        if position > 0 and tokens[position - 1] == ("punctuation", "."):
            continue  # schema.table.column: a name, never a keyword
        following = tokens[position + 1] if position + 1 < len(tokens) else None
        if word == "REPLACE" and following == ("punctuation", "("):
            continue  # replace(x, y, z): the string function
        return word
    return None


@lru_cache(maxsize=4096)
def read_only_problem(query: str) -> str | None:
    """Why ``query`` is not one read-only statement, or None when it is.

    Accepted: exactly one statement starting with ``SELECT``, ``WITH`` or
    ``VALUES`` with no data-changing keyword outside quotes (see
    :data:`WRITE_WORDS`). Cached: the same verifier queries are checked once per
    process.
    """
    try:
        statements = _statements(query)
    except _Refused as refusal:
        return str(refusal)
    if not statements:
        return "the query is empty"
    if len(statements) > 1:
        return f"the query holds {len(statements)} statements; a verifier may run only one"
    tokens = statements[0]
    kind, first = tokens[0]
    if kind != "word" or first.upper() not in READ_ONLY_STARTS:
        return f"the query is not a read-only SELECT statement (it starts with {first[:40]!r})"
    if word := _write_word(tokens):
        return f"the query is not read-only: it contains the keyword {word} outside a string"
    return None
