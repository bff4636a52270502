"""The page: a Jinja2 template (autoescaping on), the stylesheet and script inlined, data as JSON.

Model text is hostile: the template escapes every value it prints, the data
blocks escape ``<`` as ``\\u003c`` (so no ``</script>`` can end them) and the
script puts data in the page only through ``textContent``. The overview is
drawn here, in the HTML itself, so it paints before any script runs; the
tables of tasks and rollouts and the transcripts are drawn by the script, a
page at a time, from the embedded JSON. The transcripts are split into blocks
of at most :data:`DETAILS_BLOCK_BYTES` (a browser reads one block as one
string, and a string has a bound: 2**29 - 24 characters in V8); a page of more
than :data:`LARGE_PAGE_BYTES` of data says so, in the page and in the log.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
from collections.abc import Sequence
from importlib import resources
from typing import Any

from eog_core import __version__
from eog_core._plumbing import percent
from eog_core.errors import MissingExtraError
from eog_core.metrics import histogram
from eog_core.report._build import ReportContent, RunView, bands_document
from eog_core.report._fastjson import dumps_for_script, dumps_for_script_bytes
from eog_core.report._svg import PALETTE, Bar, bar_chart, histogram_chart, line_chart

__all__ = [
    "DETAILS_BLOCK_BYTES",
    "INSTALL_HINT",
    "LARGE_PAGE_BYTES",
    "MissingExtraError",
    "details_blocks",
    "render_html",
    "require_extra",
    "script_json",
    "write_html",
]

INSTALL_HINT = "pip install 'eog-core[report]'"
DETAILS_BLOCK_BYTES = 16 * 2**20
"""The most JSON one transcripts block holds (a single larger transcript is a block of its own)."""
LARGE_PAGE_BYTES = 512 * 2**20
"""Past this much data the page says it is large (and a warning is logged)."""
STRING_LIMIT = 2**29 - 24
"""V8's longest string on 64-bit machines, in UTF-16 units (at most one per UTF-8 byte)."""
log = logging.getLogger("eog_core.report")


def require_extra() -> None:
    """Raise :class:`MissingExtraError` (saying what to install) when Jinja2 is absent."""
    try:
        import jinja2  # noqa: F401
        import markupsafe  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(f"the report needs Jinja2: {INSTALL_HINT}") from exc


def _environment() -> Any:
    require_extra()
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("eog_core.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _static(name: str) -> str:
    return resources.files("eog_core.report").joinpath("static", name).read_text(encoding="utf-8")


def _script(trust: bool) -> str:
    """``report.js``; without certificates, without its lines that mark tasks by them (those
    ending in ``// trust``, and those from ``// <trust>`` to ``// </trust>``), so a report
    without certificates is the page it was before they existed."""
    js = _static("report.js")
    if trust:
        return js
    kept, inside = [], False
    for line in js.splitlines(keepends=True):
        mark = line.strip()
        if mark == "// <trust>":
            inside = True
        elif mark == "// </trust>":
            inside = False
        elif not inside and not mark.endswith("// trust"):
            kept.append(line)
    return "".join(kept)


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` survives as itself."""
    return dumps_for_script(data)


def _interval(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"{percent(ci[0])}–{percent(ci[1])}"


def _plots(content: ReportContent) -> dict[str, str]:
    runs = content.runs
    domains = sorted({g.name for run in runs for g in run.summary.by_domain})
    plots: dict[str, str] = {}
    for policy in ("strict", "parity"):
        series = []
        for run in runs:
            view = run.policies.get(policy)
            groups = {g.name: g for g in run.summary.by_domain}
            bars: list[Bar] = []
            for name in ["all", *domains]:
                group = run.summary.overall if name == "all" else groups.get(name)
                stats = group.policy(policy) if group is not None else None
                interval = view.intervals.get(name) if view is not None else None
                bars.append(
                    (
                        name,
                        stats.task_success_rate if stats else None,
                        interval.task_success if interval else None,
                    )
                )
            series.append((run.source.label, bars))
        if any(b[1] is not None for _, bars in series for b in bars):
            plots[f"domains_{policy}"] = bar_chart(
                ["all", *domains], series, label=f"{policy} success by domain"
            )
    ks = list(runs[0].summary.ks) if runs else []
    curves: list[tuple[str, Sequence[float | None], bool]] = []
    for run in runs:
        stats = run.summary.overall.strict or run.summary.overall.parity
        view = run.policies.get("strict") or run.policies.get("parity")
        if stats is None or view is None:
            continue
        at = {p.k: p.value for p in stats.pass_at}
        hat = {p.k: p.value for p in view.pass_hat}
        curves.append((f"{run.source.label} pass@k", [at.get(k) for k in ks], False))
        curves.append((f"{run.source.label} pass^k", [hat.get(k) for k in ks], True))
    if ks and curves:
        plots["pass_k"] = line_chart(ks, curves, label="pass@k and pass^k")
    return plots


def _distributions(run: RunView) -> dict[str, str]:
    usages = run.usages
    if not usages:
        return {}
    return {
        "turns": histogram_chart(
            histogram([u.turns for u in usages], 20), label="turns per rollout"
        ),
        "latency": histogram_chart(
            histogram([u.duration_ms / 1000 for u in usages], 20),
            label="rollout duration",
            unit=" s",
        ),
        **(
            {
                "tools": histogram_chart(
                    histogram(latencies, 20), label="tool call latency", unit=" ms"
                )
            }
            if (latencies := _tool_latencies(run))
            else {}
        ),
    }


def _tool_latencies(run: RunView) -> list[float]:
    found = []
    for record in run.source.records:
        turns = record.get("turns")
        for turn in turns if isinstance(turns, list) else ():
            calls = turn.get("tool_calls") if isinstance(turn, dict) else None
            for call in calls if isinstance(calls, list) else ():
                latency = call.get("latency_ms") if isinstance(call, dict) else None
                if isinstance(latency, int | float) and not isinstance(latency, bool):
                    found.append(float(latency))
    return found


Block = tuple[int, int, bytes]
"""(index of the first transcript, how many, their JSON array)."""


def details_blocks(
    details: Sequence[dict[str, Any] | None], limit: int = DETAILS_BLOCK_BYTES
) -> list[Block]:
    """The transcripts as JSON arrays of at most ``limit`` bytes each, in order; a transcript
    larger than ``limit`` is a block of its own."""
    blocks: list[Block] = []
    pieces: list[bytes] = []  # JSON array items, a run of transcripts each, "," between
    first = count = size = 0

    def close() -> None:
        nonlocal first, count, size
        blocks.append((first, count, b"[" + b",".join(pieces) + b"]"))
        first, count, size = first + count, 0, 0
        pieces.clear()

    for start in range(0, len(details), _CHUNK):
        chunk = details[start : start + _CHUNK]
        joined = dumps_for_script_bytes(list(chunk))[1:-1]  # one call for many: the fast path
        parts = [(joined, len(chunk))] if size + len(joined) + 2 <= limit else []
        if not parts:
            parts = [(dumps_for_script_bytes(detail), 1) for detail in chunk]
        for piece, number in parts:
            if pieces and size + len(piece) + 2 > limit:
                close()
            pieces.append(piece)
            count += number
            size += len(piece) + 1
    if pieces:
        close()
    return blocks


_CHUNK = 64


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


def size_notes(
    blocks: Sequence[Block], tables: Sequence[tuple[str, int]], data: int, large: int
) -> list[str]:
    """What the page says about its size: nothing, or why a browser may struggle with it
    (``tables``: the other JSON blocks' names and sizes)."""
    notes = []
    if data > large:
        notes.append(
            f"This page holds {_mb(data)} of data (its transcripts in {len(blocks)} blocks): a "
            "browser may be slow to open it, and a search of transcript text reads them all "
            "into memory. A report of fewer runs or rollouts is lighter."
        )
    long = [name for name, size in tables if size > STRING_LIMIT]
    long += [f"transcripts block {n + 1}" for n, b in enumerate(blocks) if len(b[2]) > STRING_LIMIT]
    if long:
        notes.append(
            f"Part of this page is longer than a browser can read as one string ({', '.join(long)}): "
            "what it holds cannot be shown here; it is in the runs' rollouts.jsonl."
        )
    return notes


def _block_tag(number: int) -> bytes:
    return f'<script type="application/json" id="eog-details-{number}">'.encode()


def _page(
    content: ReportContent, block_bytes: int, large_page_bytes: int
) -> tuple[str, list[bytes], str]:
    """The page around its transcripts blocks, and the blocks as the bytes of their elements."""
    blocks = details_blocks(content.details, block_bytes)
    # a fresh random slot: no text of the runs can hold it (a fixed one, a model could)
    slot = f"\x00eog-details-{secrets.token_hex(16)}\x00"
    page = _render(content, slot, blocks, large_page_bytes)
    head, found, tail = page.partition(slot)
    if not found or slot in tail:  # pragma: no cover - a template that lost its slot
        raise RuntimeError("the report's template must place the transcripts once")
    parts = []
    for number, (_, _, data) in enumerate(blocks):
        parts += [_block_tag(number), data, b"</script>\n"]
    return head, parts, tail


def render_html(
    content: ReportContent,
    *,
    block_bytes: int = DETAILS_BLOCK_BYTES,
    large_page_bytes: int = LARGE_PAGE_BYTES,
) -> str:
    """The whole self-contained page."""
    head, parts, tail = _page(content, block_bytes, large_page_bytes)
    return head + b"".join(parts).decode("utf-8") + tail


def write_html(
    content: ReportContent,
    path: str | os.PathLike[str],
    *,
    block_bytes: int = DETAILS_BLOCK_BYTES,
    large_page_bytes: int = LARGE_PAGE_BYTES,
) -> int:
    """Write the page to ``path`` without building it as one string (the transcripts, most of
    a large page, go to the file as the bytes they were encoded to); returns its size in bytes."""
    head, parts, tail = _page(content, block_bytes, large_page_bytes)
    parts = [head.encode("utf-8", "replace"), *parts, tail.encode("utf-8", "replace")]
    with open(path, "wb") as out:
        for part in parts:
            out.write(part)
    return sum(map(len, parts))


def _render(
    content: ReportContent, details_slot: str, blocks: Sequence[Block], large_page_bytes: int
) -> str:
    environment = _environment()  # first: says what to install when Jinja2 is missing
    from markupsafe import Markup

    environment.filters["pct"] = percent
    environment.filters["pct_sign"] = lambda value: "-" if value is None else f"{percent(value)}%"
    environment.filters["ci"] = _interval
    environment.filters["pp"] = lambda value: "-" if value is None else f"{value:.2f}"
    template = environment.get_template("report.html.j2")
    rows_json, tasks_json = script_json(content.rows), script_json(content.tasks)
    bands_json = script_json(bands_document(content))
    data = len(rows_json) + len(tasks_json) + len(bands_json) + sum(len(b[2]) for b in blocks)
    tables = [("the rollouts table", len(rows_json)), ("the tasks table", len(tasks_json))]
    notes = size_notes(blocks, tables, data, large_page_bytes)
    for note in notes:
        log.warning("%s", note)
    js = _script(content.trust is not None)
    meta: dict[str, Any] = {
        "title": content.title,
        "version": __version__,
        "runs": [
            {
                "index": r.index,
                "name": r.name,
                "label": r.source.label,
                "kind": r.source.kind,
                "colour": PALETTE[r.index % len(PALETTE)],
            }
            for r in content.runs
        ],
        "details": [[first, count, len(data)] for first, count, data in blocks],
    }
    if content.damage_shown:  # no key without damage verdicts: the page is as before
        meta["damage"] = True
    if content.trust is not None:  # no key without certificates: the page is as before
        meta["trust"] = {task_id: t.to_dict() for task_id, t in content.trust.items()}
    return str(
        template.render(
            content=content,
            version=__version__,
            plots=_plots(content),
            palette=PALETTE,
            groups=lambda run: [run.summary.overall, *run.summary.by_domain, *run.summary.by_mode],
            domains=sorted({g.name for run in content.runs for g in run.summary.by_domain}),
            distributions={run.index: _distributions(run) for run in content.runs},
            css=Markup(_static("report.css")),
            js=Markup(js),
            script_hash=base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode(),
            size_notes=notes,
            meta_json=Markup(script_json(meta)),
            rows_json=Markup(rows_json),
            tasks_json=Markup(tasks_json),
            bands_json=Markup(bands_json),
            details_blocks=Markup(details_slot),
            svg=Markup,
        )
    )
