"""A self-contained HTML report of one or more runs (``eog-core report``).

:func:`build_report` reads run folders (``rollouts.jsonl``) or upstream result
folders and returns the page; every number on it comes from
:mod:`eog_core.metrics`. Rendering needs the ``report`` extra (Jinja2); without
it :class:`MissingExtraError` says what to install. :func:`bands_document` is
the RL task-band export (``--bands-json``, written by :func:`bands_json`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eog_core.report._build import (
    BANDS_FORMAT,
    ComparisonView,
    PolicyView,
    ReportContent,
    RunView,
    bands_document,
    bands_json,
    build_content,
)
from eog_core.report._fastjson import paused_gc
from eog_core.report._load import RunSource, load_run
from eog_core.report._render import (
    DETAILS_BLOCK_BYTES,
    INSTALL_HINT,
    LARGE_PAGE_BYTES,
    MissingExtraError,
    render_html,
    require_extra,
    write_html,
)
from eog_core.report._transcript import DELTA_LIMIT, OBSERVATION_LIMIT

if TYPE_CHECKING:  # argument types, not names the report exports
    from eog_core.metrics import CertificateLike, Price

__all__ = [
    "BANDS_FORMAT",
    "DELTA_LIMIT",
    "DETAILS_BLOCK_BYTES",
    "INSTALL_HINT",
    "LARGE_PAGE_BYTES",
    "OBSERVATION_LIMIT",
    "ComparisonView",
    "MissingExtraError",
    "PolicyView",
    "ReportContent",
    "RunSource",
    "RunView",
    "bands_document",
    "bands_json",
    "build_content",
    "build_report",
    "load_run",
    "paused_gc",
    "render_html",
    "require_extra",
    "write_html",
    "write_report",
]


def write_report(
    paths: Sequence[str | Path],
    output: str | Path,
    *,
    title: str = "EOG evaluation report",
    prices: Sequence[Price] = (),
    tasks: Mapping[str, Any] | None = None,
    certificates: Mapping[str, CertificateLike] | None = None,
    task_digests: Mapping[str, str] | None = None,
) -> ReportContent:
    """Read the runs at ``paths`` and write the page to ``output`` (as ``eog-core report``;
    ``certificates``: task id -> certificate, as ``--certificates``)."""
    with paused_gc():
        content = build_content(
            [load_run(path) for path in paths],
            title=title,
            prices=prices,
            tasks=tasks,
            certificates=certificates,
            task_digests=task_digests,
        )
        write_html(content, output)
        return content


def build_report(
    paths: Sequence[str | Path],
    *,
    title: str = "EOG evaluation report",
    prices: Sequence[Price] = (),
    tasks: Mapping[str, Any] | None = None,
    certificates: Mapping[str, CertificateLike] | None = None,
    task_digests: Mapping[str, str] | None = None,
) -> tuple[str, ReportContent]:
    """Read the runs at ``paths`` and return the HTML page and the content it shows."""
    with paused_gc():
        content = build_content(
            [load_run(path) for path in paths],
            title=title,
            prices=prices,
            tasks=tasks,
            certificates=certificates,
            task_digests=task_digests,
        )
        return render_html(content), content
