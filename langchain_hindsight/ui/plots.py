"""Inline SVG plots rendered on the server: no script, no external asset, labels escaped.

Each function returns one ``<svg>`` element as :class:`markupsafe.Markup` (safe to
put in a template unescaped: every label passes through :func:`html.escape`). Every
plot has labelled axes with their values; memories are labelled by their words.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

__all__ = ["USAGE_COLOURS", "bars", "histogram", "line", "timeline"]

_W, _H = 640, 240
_L, _R, _T, _B = 52, 12, 14, 44  # margins: left (y values and label), right, top, bottom (x values and label)
_BAR = "#3a6ea5"
_GOOD = "#2e7d4f"
_BAD = "#b23b3b"
_AXIS = "#555"

USAGE_COLOURS = {
    "successes": _GOOD,
    "used": "#5b9bd5",
    "unknown": "#9aa5b1",
    "set_aside": "#d9a400",
    "failures": _BAD,
}
"""Colour of each segment of a memory's usage bar (by :class:`MemoryUsage` field name)."""


def _frame(body: str, testid: str, title: str, height: int = _H) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" class="plot" '
        f'role="img" aria-label="{escape(title)}" data-testid="{escape(testid)}"><title>{escape(title)}</title>{body}</svg>'  # noqa: E501
    )


def _axes(top: float, x_label: str, y_label: str, *, fmt: str = "{:g}", ticks: int = 4) -> str:
    """Both axes, ``ticks`` + 1 labelled y values from 0 to ``top``, and the axis labels."""
    x0, x1, y0, y1 = _L, _W - _R, _H - _B, _T
    parts = [
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{_AXIS}"/>',
        f'<line x1="{x0}" y1="{y1}" x2="{x0}" y2="{y0}" stroke="{_AXIS}"/>',
    ]
    for i in range(ticks + 1):
        v = top * i / ticks
        y = y0 - (y0 - y1) * i / ticks
        parts.append(f'<line x1="{x0 - 3}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#e4e7eb"/>')
        parts.append(
            f'<text x="{x0 - 5}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#333">'
            f"{escape(fmt.format(v))}</text>"
        )
    parts.append(
        f'<text x="{(x0 + x1) / 2:.0f}" y="{_H - 6}" font-size="12" text-anchor="middle" fill="#222">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text x="14" y="{(y0 + y1) / 2:.0f}" font-size="12" text-anchor="middle" fill="#222" '
        f'transform="rotate(-90 14 {(y0 + y1) / 2:.0f})">{escape(y_label)}</text>'
    )
    return "".join(parts)


def _nice(top: float) -> float:
    """A round upper bound ≥ ``top`` for a count axis (1, 2, 4, 5, 10, 20, …)."""
    if top <= 4:
        return 4.0
    step = 1.0
    while True:
        for m in (1, 2, 4, 5):
            if m * step * 4 >= top and m * step >= 1:
                return m * step * 4
        step *= 10


def histogram(
    values: Sequence[float], *, bins: int = 10, title: str = "", x_label: str = "", y_label: str = ""
) -> Markup:
    r"""A histogram of values in [0, 1] (e.g. confidences), ``bins`` equal bins, counts on the bars.

    Example:
        >>> svg = histogram([0.1, 0.15, 0.9], bins=10, title="confidence")
        >>> svg.count("<rect"), 'data-count="2"' in svg
        (10, True)
    """
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(float(v) * bins)))] += 1
    top = _nice(max(counts, default=0))
    plot_w, plot_h = _W - _L - _R, _H - _T - _B
    width = plot_w / bins
    parts = [_axes(top, x_label, y_label)]
    for i, c in enumerate(counts):
        h = plot_h * c / top
        x = _L + i * width
        y = _H - _B - h
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{width - 4:.1f}" height="{h:.1f}" fill="{_BAR}" '
            f'data-count="{c}"><title>{i / bins:.1f}–{(i + 1) / bins:.1f}: {c}</title></rect>'
        )
        parts.append(f'<text x="{x:.1f}" y="{_H - _B + 14}" font-size="11" fill="#333">{i / bins:.1f}</text>')
        if c:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{y - 3:.1f}" font-size="11" text-anchor="middle" fill="#222">{c}</text>'  # noqa: E501
            )
    parts.append(f'<text x="{_W - _R - 4}" y="{_H - _B + 14}" font-size="11" fill="#333" text-anchor="end">1.0</text>')
    return _frame("".join(parts), "plot-histogram", title)


def timeline(
    days: Sequence[str],
    series: Sequence[tuple[str, Sequence[int]]],
    *,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
) -> Markup:
    """Grouped bars per day: one bar per series (e.g. serves and successful runs), with a legend.

    Example:
        >>> svg = timeline(["2026-12-01"], [("serves", [3]), ("successes", [1])], title="t")
        >>> svg.count('data-value="3"'), "12-01" in svg
        (1, True)
    """
    colours = [_BAR, _GOOD, _BAD]
    top = _nice(max((v for _, values in series for v in values), default=0))
    plot_w, plot_h = _W - _L - _R, _H - _T - _B
    slot = plot_w / max(1, len(days))
    width = max(1.0, min(28.0, slot / max(1, len(series)) - 2))
    parts = [_axes(top, x_label, y_label)]
    for d, day in enumerate(days):
        for s, (name, values) in enumerate(series):
            v = values[d]
            h = plot_h * v / top
            x = _L + d * slot + 3 + s * (width + 1)
            parts.append(
                f'<rect x="{x:.1f}" y="{_H - _B - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{colours[s % len(colours)]}" data-value="{v}"><title>{escape(day)} {escape(name)}: {v}</title></rect>'  # noqa: E501
            )
        if len(days) <= 12 or d % max(1, len(days) // 8) == 0:
            parts.append(
                f'<text x="{_L + d * slot + 3:.1f}" y="{_H - _B + 14}" font-size="11" fill="#333">{escape(day[5:])}</text>'  # noqa: E501
            )
    for s, (name, _) in enumerate(series):
        y = _T + 4 + 15 * s
        parts.append(f'<rect x="{_W - 170}" y="{y}" width="10" height="10" fill="{colours[s % len(colours)]}"/>')
        parts.append(f'<text x="{_W - 155}" y="{y + 9}" font-size="12" fill="#222">{escape(name)}</text>')
    return _frame("".join(parts), "plot-timeline", title)


def line(
    points: Sequence[tuple[str, float]],
    *,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    testid: str = "plot-line",
) -> Markup:
    """A line of values in [0, 1] over labelled points (e.g. a memory's confidence after each change).

    Example:
        >>> svg = line([("12-01", 0.5), ("12-02", 0.55)], title="c")
        >>> svg.count("<circle"), 'data-value="0.55"' in svg
        (2, True)
    """
    plot_w, plot_h = _W - _L - _R, _H - _T - _B
    parts = [_axes(1.0, x_label, y_label, fmt="{:.2f}")]
    n = len(points)
    step = plot_w / max(1, n - 1) if n > 1 else 0.0
    xy = []
    for i, (label, v) in enumerate(points):
        x = _L + (i * step if n > 1 else plot_w / 2)
        y = _H - _B - plot_h * max(0.0, min(1.0, v))
        xy.append((x, y))
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{_BAR}" data-value="{v:.2f}">'
            f"<title>{escape(label)}: {v:.2f}</title></circle>"
        )
        if n <= 8 or i % max(1, n // 6) == 0 or i == n - 1:
            anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
            parts.append(
                f'<text x="{x:.1f}" y="{_H - _B + 14}" font-size="11" text-anchor="{anchor}" fill="#333">'
                f"{escape(label)}</text>"
            )
        parts.append(
            f'<text x="{x:.1f}" y="{y - 8:.1f}" font-size="11" text-anchor="middle" fill="#222">{v:.2f}</text>'
        )
    if len(xy) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        parts.insert(1, f'<polyline points="{path}" fill="none" stroke="{_BAR}" stroke-width="2"/>')
    return _frame("".join(parts), testid, title)


def bars(
    rows: Sequence[tuple[str, Sequence[tuple[str, str, int]]]],
    *,
    title: str = "",
    x_label: str = "",
    legend: Sequence[tuple[str, str]] = (),
) -> Markup:
    """One horizontal stacked bar per memory, labelled by its words: ``(label, [(field, name, count), …])``.

    Example:
        >>> svg = bars([("按周统计", [("successes", "ok", 1), ("failures", "bad", 2)])], title="use")
        >>> 'data-field="failures" data-value="2"' in svg and "按周统计" in svg
        True
    """
    row_h, left = 22, 230
    top = _nice(max((sum(c for _, _, c in segs) for _, segs in rows), default=0))
    height = _T + 30 + row_h * max(1, len(rows)) + 36
    right = _W - _R - 30
    parts = []
    for i, (label, segs) in enumerate(rows):
        y = _T + 24 + i * row_h
        short = label if len(label) <= 18 else label[:17] + "…"
        parts.append(
            f'<text x="{left - 6}" y="{y + 13}" font-size="12" text-anchor="end" fill="#222">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
        )
        x = float(left)
        total = sum(c for _, _, c in segs)
        for field, name, c in segs:
            w = (right - left) * c / top
            if c:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 6}" '
                    f'fill="{USAGE_COLOURS.get(field, _BAR)}" data-field="{escape(field)}" data-value="{c}">'
                    f"<title>{escape(label)} — {escape(name)}: {c}</title></rect>"
                )
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 13}" font-size="12" fill="#222">{total}</text>')
    axis_y = _T + 24 + row_h * max(1, len(rows)) + 4
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="{_AXIS}"/>')
    for i in range(5):
        x = left + (right - left) * i / 4
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 14}" font-size="11" text-anchor="middle" fill="#333">{top * i / 4:g}</text>'  # noqa: E501
        )
    parts.append(
        f'<text x="{(left + right) / 2:.0f}" y="{axis_y + 30}" font-size="12" text-anchor="middle" fill="#222">'
        f"{escape(x_label)}</text>"
    )
    x = float(left)
    for field, name in legend:
        parts.append(f'<rect x="{x:.0f}" y="{_T}" width="10" height="10" fill="{USAGE_COLOURS.get(field, _BAR)}"/>')
        parts.append(f'<text x="{x + 14:.0f}" y="{_T + 9}" font-size="12" fill="#222">{escape(name)}</text>')
        x += 20 + 13 * len(name) * (1.0 if any(ord(ch) > 0x2E80 for ch in name) else 0.55)
    return _frame("".join(parts), "plot-success", title, height=height)
