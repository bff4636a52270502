"""One grid drawing, two column layouts (#19): ours and tabulate's."""

from __future__ import annotations

from eog_core._plumbing import percent
from eog_core.metrics import _grid


def test_text_only_tables_are_drawn_alike() -> None:
    headers, rows = ["Domain", "Mode"], [["csm", "oracle"], ["itsm", "planning"]]
    expected = "\n".join(
        [
            "+----------+----------+",
            "| Domain   | Mode     |",
            "+==========+==========+",
            "| csm      | oracle   |",
            "+----------+----------+",
            "| itsm     | planning |",
            "+----------+----------+",
        ]
    )
    assert expected == _grid.grid_table(headers, rows)
    assert expected == _grid.tabulate_grid(headers, rows)


def test_the_layouts_differ_where_tabulate_does() -> None:
    headers, rows = ["Rate"], [[percent(0.5)], [percent(None)]]
    ours = _grid.grid_table(headers, rows).splitlines()
    assert [ours[3], ours[5]] == [
        "|  50.00 |",
        "|      - |",
    ]  # numbers as given, "-" right-aligned too
    theirs = _grid.tabulate_grid(headers, [[percent(0.5)], [percent(0.375)]]).splitlines()
    assert [theirs[3], theirs[5]] == [
        "|   50   |",
        "|   37.5 |",
    ]  # re-printed, aligned on the point


def test_an_empty_table_closes_as_each_layout_does() -> None:
    assert _grid.grid_table(["a"], []).splitlines()[-1] == "+-----+"
    assert _grid.tabulate_grid(["a"], []).splitlines()[-1] == "+=====+"


def test_colour_codes_do_not_count_in_widths() -> None:
    red = "\x1b[31m12.5\x1b[0m"
    assert _grid.grid_table(["x"], [[red]]).splitlines()[3] == f"| {red} |"
    assert _grid.tabulate_grid(["x"], [[red]]).splitlines()[3] == f"| {red} |"
