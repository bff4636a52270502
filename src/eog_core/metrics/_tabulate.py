"""Upstream's score table exactly as ``tabulate(rows, headers, tablefmt="grid")`` prints it.

Upstream's ``compute_score.py`` hands tabulate (0.9/0.10, defaults otherwise)
its rows; we draw the same bytes without the dependency. What tabulate does to
such rows, and so what this module does:

* each column gets the most generic type of its cells (ANSI codes ignored):
  empty < bool (``"True"``/``"False"``) < int (anything ``int()`` reads, or
  ``1,000``) < float (anything ``float()`` reads that is finite, or ``inf``,
  ``-inf``, ``nan`` spelled so) < text;
* cells of a float column are re-printed with ``format(float(cell), "g")``, so
  the ``"50.00"`` upstream formats prints ``50`` and ``"37.50"`` prints ``37.5``;
* numeric columns are aligned on the decimal point and flush right (their
  header too); other columns are stripped and flush left;
* a column is at least two wider than its header; cells are padded by one
  space; ANSI codes do not count in widths.

Not reproduced: cells holding line breaks (tabulate's multiline layout), East
Asian wide characters measured by the optional ``wcwidth`` package, and a first
cell equal to tabulate's separating-line marker ``"\\x01"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

__all__ = ["tabulate_grid"]

_ANSI = re.compile(r"""
    ( \x1b\[ [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]
    | \x1b\]8; (\w+=\w+:?)* ; ([^\x1b]+) \x1b\\ ([^\x1b]+) \x1b\]8;;\x1b\\ )
""", re.VERBOSE)
_THOUSANDS = re.compile(r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\.[0-9]*|\.[0-9]+)?$")
_EMPTY, _BOOL, _INT, _FLOAT, _TEXT = range(5)

Cell = str | int


def _visible(text: str) -> str:
    return _ANSI.sub(r"\4", text)


def _reads_as(convert: Callable[[str], object], text: str) -> bool:
    try:
        convert(text)
    except (ValueError, TypeError):
        return False
    return True


def _is_int(cell: Cell) -> bool:
    return type(cell) is int or (isinstance(cell, str) and _reads_as(int, cell))


def _is_number(cell: Cell) -> bool:
    if type(cell) is int:
        return True
    if not _reads_as(float, str(cell)):
        return False
    value = float(cell)
    return not (math.isinf(value) or math.isnan(value)) or str(cell).lower() in ("inf", "-inf", "nan")


def _kind(cell: Cell) -> int:
    if isinstance(cell, str):
        cell = _visible(cell)
    if cell == "":
        return _EMPTY
    if type(cell) is bool or cell in ("True", "False"):
        return _BOOL
    thousands = isinstance(cell, str) and _THOUSANDS.match(cell) is not None
    if _is_int(cell) or (thousands and "." not in str(cell)):
        return _INT
    if _is_number(cell) or thousands:
        return _FLOAT
    return _TEXT


def _render(cell: Cell, kind: int, invisible: bool) -> str:
    if cell == "":
        return ""
    if kind != _FLOAT:
        return str(cell)
    text = str(cell)
    if invisible and isinstance(cell, str):
        raw = _visible(text)
        try:
            return text.replace(raw, format(float(raw), "g"))
        except (ValueError, TypeError):
            return text
    try:
        return format(float(text.replace(",", "")), "g")
    except (ValueError, TypeError):
        return text


def _after_point(text: str) -> int:
    if not (_is_number(text) or _THOUSANDS.match(text)) or _is_int(text):
        return -1
    point = text.rfind(".")
    if point < 0:
        point = text.lower().rfind("e")
    return len(text) - point - 1 if point >= 0 else -1


def tabulate_grid(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """The grid tabulate prints for ``rows`` under ``headers`` (no trailing newline)."""
    invisible = any(_ANSI.search(str(cell)) for cell in (*headers, *(c for row in rows for c in row)))
    width: Callable[[str], int] = (lambda s: len(_visible(s))) if invisible else len
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in headers]
    texts: list[list[str]] = []
    numeric: list[bool] = []
    for header, cells in zip(headers, columns, strict=True):
        kind = max([_BOOL, *(_kind(cell) for cell in cells)])
        rendered = [_render(cell, kind, invisible) for cell in cells]
        is_number = kind in (_INT, _FLOAT)
        if is_number:
            points = [_after_point(_visible(s) if invisible else s) for s in rendered]
            most = max(points, default=-1)
            rendered = [s + " " * (most - p) for s, p in zip(rendered, points, strict=True)]
        else:
            rendered = [s.strip() for s in rendered]
        size = max([width(header) + 2, *(width(s) for s in rendered)])
        texts.append([_pad(s, size, width, right=is_number) for s in [header, *rendered]])
        numeric.append(is_number)
    sizes = [width(column[0]) for column in texts]

    def rule(fill: str) -> str:
        return "+" + "+".join(fill * (size + 2) for size in sizes) + "+"

    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {cell} " for cell in cells) + "|"

    out = [rule("-"), line([column[0] for column in texts]), rule("=")]
    for index in range(len(rows)):
        out += [line([column[index + 1] for column in texts]), rule("-")]
    return "\n".join(out)


def _pad(text: str, size: int, width: Callable[[str], int], *, right: bool) -> str:
    gap = " " * max(size - width(text), 0)
    return gap + text if right else text + gap
