"""Small inline SVG line charts for the HTML report: no library, no script, no external asset.

A chart is a handful of polylines on a fixed canvas with a zero baseline, a few gridlines, start/middle/end
times and an optional threshold (KV usage 95%: where the trees call the cache exhausted); with more than one
series (one line per GPU) ``legend`` names them in their colours. Gaps in the data (a scrape outage) stay gaps.
"""

from __future__ import annotations

import html
import math
from datetime import datetime, timezone

WIDTH, HEIGHT = 560, 150
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 44, 10, 10, 22
PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d",
           "#475569", "#ea580c")


def line_chart(series: dict[str, list[tuple[float, float | None]]], *, start: float, end: float, title: str,
               unit: str, threshold: float | None = None) -> str:
    """One chart; ``unit`` "ratio" plots 0..100%, anything else 0..max. A None value breaks the line (a hole in
    the data); empty series draw a "no data" note."""
    plot_w, plot_h = WIDTH - _PAD_L - _PAD_R, HEIGHT - _PAD_T - _PAD_B
    values = [v for points in series.values() for _, v in points if v is not None]
    top = 1.0 if unit == "ratio" else _nice_top(max(values, default=0.0))
    span = max(end - start, 1.0)

    def x(t: float) -> float:
        return _PAD_L + (t - start) / span * plot_w

    def y(v: float) -> float:
        return _PAD_T + plot_h - min(max(v, 0.0), top) / top * plot_h

    out = [f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
           f'role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>']
    for tick in (0.0, top / 2, top):
        ty = y(tick)
        out.append(f'<line class="grid" x1="{_PAD_L}" x2="{WIDTH - _PAD_R}" y1="{ty:.1f}" y2="{ty:.1f}"/>')
        out.append(f'<text class="axis" x="{_PAD_L - 4}" y="{ty + 3:.1f}" text-anchor="end">'
                   f'{_e(_tick_label(tick, unit))}</text>')
    for t, anchor in ((start, "start"), ((start + end) / 2, "middle"), (end, "end")):
        out.append(f'<text class="axis" x="{x(t):.1f}" y="{HEIGHT - 6}" text-anchor="{anchor}">'
                   f'{_e(_time_label(t, span))}</text>')
    if threshold is not None and threshold <= top:
        out.append(f'<line class="threshold" x1="{_PAD_L}" x2="{WIDTH - _PAD_R}" y1="{y(threshold):.1f}" '
                   f'y2="{y(threshold):.1f}"/>')
    if not values:
        out.append(f'<text class="nodata" x="{_PAD_L + plot_w / 2:.1f}" y="{_PAD_T + plot_h / 2:.1f}" '
                   'text-anchor="middle">no data in the window</text>')
    sx, sy, floor = plot_w / span, plot_h / top, _PAD_T + plot_h  # x() and y() inlined: charts hold many points
    for index, (label, points) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        for run in _runs(points):
            coords = " ".join(f"{_PAD_L + (t - start) * sx:.1f},{floor - min(max(v, 0.0), top) * sy:.1f}"
                              for t, v in run)
            out.append(f'<polyline class="line" fill="none" stroke="{color}" points="{coords}">'
                       f'<title>{_e(label)}</title></polyline>')
    out.append("</svg>")
    return "".join(out)


def legend(labels: list[str]) -> str:
    """The series' names in their line colours, for under the chart (inside it they would hide the lines)."""
    if len(labels) < 2:
        return ""
    return " ".join(f'<span class="legend" style="color:{PALETTE[i % len(PALETTE)]}">{_e(label)}</span>'
                    for i, label in enumerate(labels))


def _runs(points: list[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """The stretches between holes (None values); a lone point is drawn as a dot-length line."""
    runs: list[list[tuple[float, float]]] = [[]]
    for t, v in points:
        if v is None:
            runs.append([])
        else:
            runs[-1].append((t, v))
    return [run if len(run) > 1 else run * 2 for run in runs if run]


def _nice_top(peak: float) -> float:
    """1, 2 or 5 × a power of ten at or above the peak (never 0)."""
    if peak <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= peak)


def _tick_label(value: float, unit: str) -> str:
    if unit == "ratio":
        return f"{value * 100:.0f}%"
    return f"{value:g}" if value < 1000 else f"{value / 1000:g}k"


def _time_label(ts: float, span: float) -> str:
    moment = datetime.fromtimestamp(ts, timezone.utc)
    return moment.strftime("%m-%d %H:%M" if span > 86400 else "%H:%M") + ("Z" if span <= 86400 else "")


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
