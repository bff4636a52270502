"""Plain-text grid tables in the layout of ``tabulate(..., tablefmt="grid")``, in two flavours.

One drawing (``+---+`` rules, ``| cell |`` lines, a ``=`` rule under the header,
every column at least two wider than its header, ANSI codes not counted in
widths) and two ways of laying out the columns:

* :func:`grid_table`, our tables: a column is numeric (right-aligned, header too)
  when every cell is a number or ``-`` (no value) and one at least is a number;
  cells are printed as given.
* :func:`tabulate_grid`, upstream's score table exactly as ``tabulate(rows, headers,
  tablefmt="grid")`` (0.9/0.10, defaults otherwise) prints it:

  - each column gets the most generic type of its cells (ANSI codes ignored):
    empty < bool (``"True"``/``"False"``) < int (anything ``int()`` reads, or
    ``1,000``) < float (anything ``float()`` reads that is finite, or ``inf``,
    ``-inf``, ``nan`` spelled so) < text;
  - cells of a float column are re-printed with ``format(float(cell), "g")``, so
    the ``"50.00"`` upstream formats prints ``50`` and ``"37.50"`` prints ``37.5``;
  - numeric columns are aligned on the decimal point and flush right (their
    header too); other columns are stripped and flush left.

  Not reproduced: cells holding line breaks (tabulate's multiline layout), East
  Asian wide characters measured by the optional ``wcwidth`` package, and a first
  cell equal to tabulate's separating-line marker ``"\\x01"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

__all__ = ["grid_table", "tabulate_grid"]

#: ANSI escapes tabulate ignores in widths: CSI sequences (colours) and OSC 8 links.
_ANSI = re.compile(
    r"""
    ( \x1b\[ [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]
    | \x1b\]8; (\w+=\w+:?)* ; ([^\x1b]+) \x1b\\ ([^\x1b]+) \x1b\]8;;\x1b\\ )
""",
    re.VERBOSE,
)
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_THOUSANDS = re.compile(r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\.[0-9]*|\.[0-9]+)?$")
_EMPTY, _BOOL, _INT, _FLOAT, _TEXT = range(5)

Cell = str | int


def _visible(text: str) -> str:
    """``text`` as the terminal shows it: colours dropped, a link's text kept."""
    return _ANSI.sub(r"\4", text)


def _visible_width(text: str) -> int:
    return len(_visible(text))


def _pad(text: str, size: int, width: Callable[[str], int], *, right: bool) -> str:
    gap = " " * max(size - width(text), 0)
    return gap + text if right else text + gap


def _draw(
    columns: Sequence[Sequence[str]],
    rows: int,
    width: Callable[[str], int],
    *,
    header_rule_when_empty: str,
) -> str:
    """The grid of ``columns`` (each its header then ``rows`` cells, already padded)."""
    sizes = [width(column[0]) for column in columns]

    def rule(fill: str) -> str:
        return "+" + "+".join(fill * (size + 2) for size in sizes) + "+"

    def line(index: int) -> str:
        return "|" + "|".join(f" {column[index]} " for column in columns) + "|"

    out = [rule("-"), line(0), rule("=" if rows else header_rule_when_empty)]
    for index in range(1, rows + 1):
        out += [line(index), rule("-")]
    return "\n".join(out)


def grid_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render ``rows`` under ``headers`` as our grid (cells as given, see the module)."""
    columns: list[list[str]] = []
    for i, header in enumerate(headers):
        cells = [row[i] for row in rows]
        numeric = any(cell != "-" for cell in cells) and all(
            cell == "-" or _NUMBER.fullmatch(_visible(cell).strip()) for cell in cells
        )
        size = max([len(header) + 2, *(_visible_width(cell) for cell in cells)])
        columns.append(
            [_pad(text, size, _visible_width, right=numeric) for text in [header, *cells]]
        )
    return _draw(columns, len(rows), _visible_width, header_rule_when_empty="-")


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
    return not (math.isinf(value) or math.isnan(value)) or str(cell).lower() in (
        "inf",
        "-inf",
        "nan",
    )


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
    invisible = any(
        _ANSI.search(str(cell)) for cell in (*headers, *(c for row in rows for c in row))
    )
    width: Callable[[str], int] = _visible_width if invisible else len
    cells_by_column = list(zip(*rows, strict=True)) if rows else [() for _ in headers]
    columns: list[list[str]] = []
    for header, cells in zip(headers, cells_by_column, strict=True):
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
        columns.append([_pad(s, size, width, right=is_number) for s in [header, *rendered]])
    return _draw(columns, len(rows), width, header_rule_when_empty="=")
