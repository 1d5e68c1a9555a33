"""Inline SVG plots rendered on the server: no script, no external asset, labels escaped.

Each function returns one ``<svg>`` element as :class:`markupsafe.Markup` (safe to
put in a template unescaped: every label passes through :func:`html.escape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

__all__ = ["bars", "histogram", "timeline"]

_W, _H, _PAD = 640, 220, 36
_BAR = "#4a78b5"
_GOOD = "#3c9a5f"


def _frame(body: str, testid: str, title: str) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" '
        f'role="img" data-testid="{escape(testid)}"><title>{escape(title)}</title>{body}</svg>'
    )


def _axis() -> str:
    return (
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - 8}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<line x1="{_PAD}" y1="8" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>'
    )


def histogram(values: Sequence[float], *, bins: int = 10, title: str = "") -> Markup:
    r"""A histogram of values in [0, 1] (e.g. confidences), ``bins`` equal bins.

    Example:
        >>> svg = histogram([0.1, 0.15, 0.9], bins=10, title="confidence")
        >>> svg.count("<rect"), 'data-count="2"' in svg
        (10, True)
    """
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(float(v) * bins)))] += 1
    top = max(counts) or 1
    width = (_W - _PAD - 16) / bins
    parts = [_axis()]
    for i, c in enumerate(counts):
        h = (_H - 2 * _PAD) * c / top
        x = _PAD + 4 + i * width
        y = _H - _PAD - h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{width - 4:.1f}" height="{h:.1f}" fill="{_BAR}" '
            f'data-count="{c}"><title>{i / bins:.1f}–{(i + 1) / bins:.1f}: {c}</title></rect>'
        )
        parts.append(f'<text x="{x:.1f}" y="{_H - _PAD + 14}" font-size="10">{i / bins:.1f}</text>')
        if c:
            parts.append(f'<text x="{x:.1f}" y="{y - 3:.1f}" font-size="10">{c}</text>')
    return _frame("".join(parts), "plot-histogram", title)


def timeline(days: Sequence[str], series: Sequence[tuple[str, Sequence[int]]], *, title: str = "") -> Markup:
    """Grouped bars per day: one bar per series (e.g. serves and successful runs), with a legend.

    Example:
        >>> svg = timeline(["2026-12-01"], [("serves", [3]), ("successes", [1])], title="t")
        >>> svg.count('data-value="3"'), "2026-12-01" in svg
        (1, True)
    """
    colours = [_BAR, _GOOD, "#c0504d"]
    top = max((v for _, values in series for v in values), default=0) or 1
    slot = (_W - _PAD - 16) / max(1, len(days))
    width = max(1.0, slot / max(1, len(series)) - 2)
    parts = [_axis()]
    for d, day in enumerate(days):
        for s, (_, values) in enumerate(series):
            v = values[d]
            h = (_H - 2 * _PAD) * v / top
            x = _PAD + 4 + d * slot + s * (width + 1)
            parts.append(
                f'<rect x="{x:.1f}" y="{_H - _PAD - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{colours[s % len(colours)]}" data-value="{v}"><title>{escape(day)}: {v}</title></rect>'
            )
        if len(days) <= 12 or d % max(1, len(days) // 8) == 0:
            parts.append(f'<text x="{_PAD + d * slot:.1f}" y="{_H - _PAD + 14}" font-size="9">{escape(day[5:])}</text>')
    for s, (name, _) in enumerate(series):
        y = 14 + 14 * s
        parts.append(f'<rect x="{_W - 150}" y="{y - 9}" width="10" height="10" fill="{colours[s % len(colours)]}"/>')
        parts.append(f'<text x="{_W - 135}" y="{y}" font-size="11">{escape(name)}</text>')
    if not days:
        parts.append(f'<text x="{_W / 2 - 10}" y="{_H / 2}" font-size="12">–</text>')
    return _frame("".join(parts), "plot-timeline", title)


def bars(rows: Sequence[tuple[str, float, str]], *, title: str = "") -> Markup:
    """Horizontal bars of rates in [0, 1]: ``(label, rate, note)`` per row, best first as given.

    Example:
        >>> svg = bars([("mem_1", 0.5, "1/2")], title="success")
        >>> 'data-rate="0.50"' in svg and "mem_1" in svg
        True
    """
    row_h = 18
    height = max(_H, 16 + row_h * len(rows))
    left, right = 190, _W - 60
    parts = []
    for i, (label, rate, note) in enumerate(rows):
        y = 8 + i * row_h
        w = (right - left) * max(0.0, min(1.0, rate))
        parts.append(f'<text x="4" y="{y + 12}" font-size="11">{escape(label[:28])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{right - left}" height="{row_h - 4}" fill="#eee"/>')
        parts.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{row_h - 4}" fill="{_GOOD}" data-rate="{rate:.2f}">'
            f"<title>{escape(label)}: {escape(note)}</title></rect>"
        )
        parts.append(f'<text x="{right + 4}" y="{y + 12}" font-size="11">{escape(note)}</text>')
    body = "".join(parts)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}" '
        f'role="img" data-testid="plot-success"><title>{escape(title)}</title>{body}</svg>'
    )
