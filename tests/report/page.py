"""Reading a written report without a browser: its metric cells and its embedded JSON blocks."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

MetricKey = tuple[str, str, str, str]
"""(run index, policy, group, metric)."""


class MetricCells(HTMLParser):
    """Every ``data-metric`` cell of the overview tables, keyed by run, policy, group and metric."""

    def __init__(self) -> None:
        super().__init__()
        self.run: str | None = None
        self.policy: str | None = None
        self.group: str | None = None
        self.cells: dict[MetricKey, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "article" and "data-run" in found:
            self.run = found["data-run"]
        if tag == "table":
            self.policy = (
                found.get("data-policy") if "overview" in (found.get("class") or "") else None
            )
            if "damage" in (found.get("class") or ""):
                self.policy = "damage"  # the damage table: one per run, not per policy
            self.group = "all" if "passk" in (found.get("class") or "") else None
            if "passk" in (found.get("class") or ""):
                self.policy = found.get("data-policy")
        if tag == "tr" and "data-group" in found:
            self.group = found["data-group"]
        metric, value = found.get("data-metric"), found.get("data-value")
        if metric and value is not None and self.run and self.policy and self.group:
            self.cells[(self.run, self.policy, self.group, metric)] = value


def metric_cells(html: str) -> dict[MetricKey, str]:
    parser = MetricCells()
    parser.feed(html)
    return parser.cells


def json_block(html: str, block_id: str) -> Any:
    """The JSON of ``<script type="application/json" id=BLOCK_ID>``."""
    match = re.search(
        rf'<script type="application/json" id="{block_id}">(.*?)</script>', html, re.S
    )
    assert match is not None, f"no {block_id} block"
    return json.loads(match.group(1))


def transcripts(html: str) -> list[Any]:
    """The transcripts of every ``eog-details-N`` block, in order (checking the blocks' index)."""
    meta = json_block(html, "eog-meta")
    found: list[Any] = []
    for number, (first, count, size) in enumerate(meta["details"]):
        match = re.search(
            rf'<script type="application/json" id="eog-details-{number}">(.*?)</script>', html, re.S
        )
        assert match is not None, f"no eog-details-{number} block"
        assert len(match.group(1).encode("utf-8", "surrogatepass")) == size
        block = json.loads(match.group(1))
        assert (first, count) == (len(found), len(block))
        found += block
    assert f'id="eog-details-{len(meta["details"])}"' not in html
    return found


def as_number(text: str) -> float | None:
    return None if text == "None" else float(text)
