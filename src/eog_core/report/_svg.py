"""Plots as inline SVG strings, drawn here: no plotting library, no script, nothing fetched.

Every label is XML-escaped (task and domain names come from data files). Each
plot carries a ``<title>`` per mark so a hover shows the exact value.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from eog_core.metrics import Histogram

__all__ = ["PALETTE", "bar_chart", "histogram_chart", "line_chart"]

PALETTE = ("#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2")
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'

Bar = tuple[str, float | None, tuple[float, float] | None]
"""(label, value 0..1, interval)."""


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label={quoteattr(label)} {_FONT}>'
        + "".join(body)
        + "</svg>"
    )


def bar_chart(
    groups: Sequence[str], series: Sequence[tuple[str, Sequence[Bar]]], *, label: str
) -> str:
    """Horizontal bars 0..100 % per group, one bar per series, with interval whiskers."""
    bar_h, gap, left, width = 12, 10, 140, 560
    per_group = bar_h * len(series) + gap
    legend = 16 if len(series) > 1 else 0
    height = 24 + per_group * len(groups) + 20 + legend
    plot_w = width - left - 20
    body = []
    x = float(left)
    for s, (name, _) in enumerate(series if legend else ()):
        body.append(
            f'<rect x="{x:.1f}" y="2" width="10" height="10" fill="{PALETTE[s % len(PALETTE)]}"/>'
            f'<text x="{x + 14:.1f}" y="11">{escape(name[:30])}</text>'
        )
        x += 24 + 6.5 * min(len(name), 30)
    for tick in range(0, 101, 25):
        x = left + plot_w * tick / 100
        body.append(
            f'<line x1="{x:.1f}" y1="{16 + legend}" x2="{x:.1f}" y2="{height - 18}" stroke="#e5e7eb"/>'
            f'<text x="{x:.1f}" y="{height - 6}" text-anchor="middle" fill="#6b7280">{tick}%</text>'
        )
    for g, group in enumerate(groups):
        top = 20 + legend + g * per_group
        body.append(
            f'<text x="{left - 6}" y="{top + per_group / 2:.1f}" text-anchor="end" '
            f'dominant-baseline="middle">{escape(group[:22])}</text>'
        )
        for s, (name, bars) in enumerate(series):
            _, value, interval = bars[g]
            y = top + s * bar_h
            colour = PALETTE[s % len(PALETTE)]
            if value is None:
                continue
            tip = f"{name} · {group}: {_pct(value)}"
            if interval is not None:
                tip += f" (95% CI {_pct(interval[0])}–{_pct(interval[1])})"
            body.append(
                f'<rect x="{left}" y="{y + 1}" width="{plot_w * value:.1f}" height="{bar_h - 2}" '
                f'fill="{colour}" opacity="0.85"><title>{escape(tip)}</title></rect>'
            )
            if interval is not None:
                x0, x1 = left + plot_w * interval[0], left + plot_w * interval[1]
                mid = y + bar_h / 2
                body.append(
                    f'<path d="M{x0:.1f} {mid:.1f}H{x1:.1f}M{x0:.1f} {mid - 3:.1f}v6'
                    f'M{x1:.1f} {mid - 3:.1f}v6" stroke="#111827" stroke-width="1.2"/>'
                )
    return _svg(width, height, body, label)


def line_chart(
    xs: Sequence[int], series: Sequence[tuple[str, Sequence[float | None], bool]], *, label: str
) -> str:
    """Lines over k = xs (0..100 %); the flag dashes a series (pass^k against pass@k)."""
    width, height, left, bottom, top = 520, 220, 44, 28, 12
    plot_w, plot_h = width - left - 210, height - top - bottom
    span = max(len(xs) - 1, 1)

    def point(i: int, value: float) -> tuple[float, float]:
        return left + plot_w * i / span, top + plot_h * (1 - value)

    body = []
    for tick in range(0, 101, 25):
        y = top + plot_h * (1 - tick / 100)
        body.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e7eb"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" fill="#6b7280">{tick}%</text>'
        )
    for i, k in enumerate(xs):
        x, _ = point(i, 0)
        body.append(
            f'<text x="{x:.1f}" y="{height - 10}" text-anchor="middle" fill="#6b7280">k={k}</text>'
        )
    for s, (name, values, dashed) in enumerate(series):
        colour = PALETTE[(s // 2) % len(PALETTE)]
        points = [(i, v) for i, v in enumerate(values) if v is not None]
        if not points:
            continue
        path = " ".join(
            f"{'M' if j == 0 else 'L'}{point(i, v)[0]:.1f} {point(i, v)[1]:.1f}"
            for j, (i, v) in enumerate(points)
        )
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        body.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for i, v in points:
            x, y = point(i, v)
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{escape(f'{name} k={xs[i]}: {_pct(v)}')}</title></circle>"
            )
        ly = top + 14 * s + 6
        body.append(
            f'<path d="M{left + plot_w + 8} {ly}h18" stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{left + plot_w + 30}" y="{ly + 4}">{escape(name[:30])}</text>'
        )
    return _svg(width, height, body, label)


def histogram_chart(hist: Histogram, *, label: str, unit: str = "") -> str:
    """Bars of a :class:`Histogram` with the range on the axis."""
    width, height, left, bottom = 420, 160, 36, 26
    plot_w, plot_h = width - left - 10, height - bottom - 10
    body = []
    top_count = max(hist.counts, default=0)
    bins = len(hist.counts)
    step = (hist.high - hist.low) / bins if bins else 0.0
    for i, count in enumerate(hist.counts):
        h = plot_h * count / top_count if top_count else 0
        x = left + plot_w * i / bins
        lo = hist.low + step * i
        tip = (
            f"{lo:.4g}–{lo + step:.4g}{unit}: {count}" if step else f"{hist.low:.4g}{unit}: {count}"
        )
        body.append(
            f'<rect x="{x + 1:.1f}" y="{10 + plot_h - h:.1f}" width="{max(plot_w / bins - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{PALETTE[0]}" opacity="0.8"><title>{escape(tip)}</title></rect>'
        )
    body.append(
        f'<line x1="{left}" y1="{10 + plot_h}" x2="{left + plot_w}" y2="{10 + plot_h}" stroke="#9ca3af"/>'
        f'<text x="{left}" y="{height - 8}" fill="#6b7280">{hist.low:.4g}{escape(unit)}</text>'
        f'<text x="{left + plot_w}" y="{height - 8}" text-anchor="end" fill="#6b7280">'
        f"{hist.high:.4g}{escape(unit)}</text>"
        f'<text x="{left - 4}" y="16" text-anchor="end" fill="#6b7280">{top_count}</text>'
    )
    return _svg(width, height, body, label)
