"""The page: a Jinja2 template (autoescaping on), the stylesheet and script inlined, data as JSON.

Model text is hostile: the template escapes every value it prints, the data
blocks escape ``<`` as ``\\u003c`` (so no ``</script>`` can end them) and the
script puts data in the page only through ``textContent``. The overview is
drawn here, in the HTML itself, so it paints before any script runs; the
tables of tasks and rollouts and the transcripts are drawn by the script, a
page at a time, from the embedded JSON.
"""

from __future__ import annotations

import os
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
    "INSTALL_HINT",
    "MissingExtraError",
    "render_html",
    "require_extra",
    "script_json",
    "write_html",
]

INSTALL_HINT = "pip install 'eog-core[report]'"


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


_DETAILS_SLOT = "\x00eog-details\x00"  # no rendered text holds a NUL: JSON escapes it


def render_html(content: ReportContent) -> str:
    """The whole self-contained page."""
    return _render(content, dumps_for_script(content.details))


def write_html(content: ReportContent, path: str | os.PathLike[str]) -> int:
    """Write the page to ``path`` without building it as one string (the transcripts, most of
    a large page, go to the file as the bytes they were encoded to); returns its size in bytes."""
    head, tail = _render(content, _DETAILS_SLOT).split(_DETAILS_SLOT)
    details = dumps_for_script_bytes(content.details)
    parts = [head.encode("utf-8", "replace"), details, tail.encode("utf-8", "replace")]
    with open(path, "wb") as out:
        for part in parts:
            out.write(part)
    return sum(map(len, parts))


def _render(content: ReportContent, details_json: str) -> str:
    environment = _environment()  # first: says what to install when Jinja2 is missing
    from markupsafe import Markup

    environment.filters["pct"] = percent
    environment.filters["pct_sign"] = lambda value: "-" if value is None else f"{percent(value)}%"
    environment.filters["ci"] = _interval
    template = environment.get_template("report.html.j2")
    meta = {
        "title": content.title,
        "version": __version__,
        "runs": [
            {
                "index": r.index,
                "label": r.source.label,
                "kind": r.source.kind,
                "colour": PALETTE[r.index % len(PALETTE)],
            }
            for r in content.runs
        ],
    }
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
            js=Markup(_static("report.js")),
            meta_json=Markup(script_json(meta)),
            rows_json=Markup(script_json(content.rows)),
            tasks_json=Markup(script_json(content.tasks)),
            bands_json=Markup(script_json(bands_document(content))),
            details_json=Markup(details_json),
            svg=Markup,
        )
    )
