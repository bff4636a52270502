"""A plain-text grid table in the layout of ``tabulate(..., tablefmt="grid")``.

Upstream prints its score table with tabulate; we draw the same grid without the
dependency: numeric columns right-aligned (header too), text columns
left-aligned, every column at least two wider than its header, ANSI colour
codes not counted in widths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["grid_table", "percent"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def percent(fraction: float | None) -> str:
    """A fraction as a percentage with two decimals (``0.5 -> "50.00"``); ``-`` for none."""
    return "-" if fraction is None else f"{fraction * 100.0:.2f}"


def _visible(cell: str) -> str:
    return _ANSI.sub("", cell)


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(_visible(cell).strip()) is not None


def _pad(cell: str, width: int, *, right: bool) -> str:
    gap = " " * (width - len(_visible(cell)))
    return gap + cell if right else cell + gap


def grid_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render ``rows`` under ``headers`` as a grid.

    A column is numeric (right-aligned) when every cell is a number or ``-``
    (no value) and at least one is a number.
    """
    columns = range(len(headers))
    numeric = [
        any(row[i] != "-" for row in rows)
        and all(row[i] == "-" or _is_number(row[i]) for row in rows)
        for i in columns
    ]
    widths = [
        max([len(headers[i]) + 2, *(len(_visible(row[i])) for row in rows)]) for i in columns
    ]

    def rule(fill: str) -> str:
        return "+" + "+".join(fill * (width + 2) for width in widths) + "+"

    def line(cells: Sequence[str]) -> str:
        padded = (_pad(cells[i], widths[i], right=numeric[i]) for i in columns)
        return "| " + " | ".join(padded) + " |"

    out = [rule("-"), line(headers), rule("=")]
    for row in rows:
        out += [line(row), rule("-")]
    if not rows:
        out[-1] = rule("-")
    return "\n".join(out)
