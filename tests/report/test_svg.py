"""The plots: labels from data files are escaped, values land where they should."""

from __future__ import annotations

from xml.etree import ElementTree

from eog_core.metrics import histogram
from eog_core.report._svg import bar_chart, histogram_chart, line_chart

HOSTILE = '<script>alert("x")</script>&'


def test_bar_chart_escapes_labels_and_draws_one_bar_per_value() -> None:
    svg = bar_chart(
        [HOSTILE, "csm"],
        [(HOSTILE, [(HOSTILE, 0.5, (0.25, 0.75)), ("csm", None, None)])],
        label=HOSTILE,
    )
    root = ElementTree.fromstring(svg)  # well-formed XML: nothing escaped the markup
    assert "<script>" not in svg
    bars = root.findall("{http://www.w3.org/2000/svg}rect")
    widths = [
        float(b.get("width", "0"))
        for b in bars
        if b.find("{http://www.w3.org/2000/svg}title") is not None
    ]
    assert widths == [400 * 0.5]  # plot width 400: half of it; the missing value draws nothing
    assert any(
        "95% CI 25.0%–75.0%" in (t.text or "")
        for t in root.iter("{http://www.w3.org/2000/svg}title")
    )


def test_line_and_histogram_charts_are_well_formed() -> None:
    ElementTree.fromstring(
        line_chart([1, 2, 3], [(HOSTILE, [1.0, 0.5, None], False)], label=HOSTILE)
    )
    root = ElementTree.fromstring(
        histogram_chart(histogram([1, 2, 2, 3], 3), label=HOSTILE, unit="<s>")
    )
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert [title.rsplit(": ", 1)[1] for title in titles if title] == ["1", "2", "1"]
