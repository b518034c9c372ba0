"""Charts as inline SVG text: grouped bars, stacked shares, lines. No plotting library.

Every chart is a complete ``<svg>`` element with a ``<title>`` for screen readers and a
``<title>`` tooltip on each mark, so the HTML report stays one self-contained file.

>>> svg = bar_chart("Accuracy", ["easy", "hard"], [("run", [0.5, None])])
>>> svg.startswith("<svg") and "50.0%" in svg and "n/a" in svg
True
"""

from __future__ import annotations

from html import escape
from typing import Sequence

__all__ = ["PALETTE", "OUTCOME_COLOURS", "bar_chart", "line_chart", "stacked_shares"]

# Colour-blind-safe (Okabe-Ito) series colours.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
OUTCOME_COLOURS = {"equivalent": "#009E73", "executable": "#E69F00", "parsable": "#56B4E9", "invalid": "#D55E00"}

Series = tuple[str, Sequence[float | None]]

_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _fmt(value: float | None, percent: bool) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:.1f}%" if percent else (f"{value:.2f}" if abs(value) < 100 else f"{value:,.0f}")


def _open(title: str, width: int, height: int) -> list[str]:
    return [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" {_FONT}>',
        f"<title>{escape(title)}</title>",
        f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="13" font-weight="600">{escape(title)}</text>',
    ]


def _legend(names: Sequence[str], colours: Sequence[str], x: float, y: float) -> list[str]:
    parts = []
    for i, (name, colour) in enumerate(zip(names, colours)):
        yy = y + i * 15
        parts.append(f'<rect x="{x}" y="{yy - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{yy}">{escape(name)}</text>')
    return parts


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    for step in (1, 2, 2.5, 5):
        for power in range(-3, 10):
            candidate = step * 10**power
            if candidate >= value:
                return candidate
    return value


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    percent: bool = True,
    y_max: float | None = None,
    width: int = 560,
    height: int = 260,
) -> str:
    """Grouped vertical bars: one group per category, one bar per series."""
    left, right, top, bottom = 48, 150 if len(series) > 1 else 16, 26, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, vs in series for v in vs if v is not None]
    top_value = y_max if y_max is not None else (1.0 if percent else _nice_max(max(values, default=1.0)))
    parts = _open(title, width, height)
    for i in range(5):
        frac = i / 4
        y = top + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_fmt(top_value * frac, percent)}</text>')
    group_w = plot_w / max(1, len(categories))
    bar_w = group_w * 0.8 / max(1, len(series))
    for c, category in enumerate(categories):
        gx = left + c * group_w + group_w * 0.1
        for s, (name, vs) in enumerate(series):
            value = vs[c] if c < len(vs) else None
            x = gx + s * bar_w
            tip = escape(f"{name} · {category}: {_fmt(value, percent)}")
            if value is None:
                parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 3}" text-anchor="middle" fill="#999">n/a<title>{tip}</title></text>')
                continue
            h = plot_h * min(1.0, max(0.0, value / top_value))
            colour = PALETTE[s % len(PALETTE)]
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{max(1.0, bar_w - 2):.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{tip}</title></rect>'
            )
        label = category if len(category) <= 14 else category[:13] + "…"
        parts.append(f'<text x="{gx + group_w * 0.4:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{escape(label)}</text>')
    if len(series) > 1:
        parts += _legend([n for n, _ in series], PALETTE, width - right + 10, top + 10)
    parts.append("</svg>")
    return "\n".join(parts)


def stacked_shares(
    title: str,
    rows: Sequence[tuple[str, dict[str, float]]],
    keys: Sequence[str],
    colours: dict[str, str],
    *,
    width: int = 560,
) -> str:
    """One horizontal bar per row, split into the shares of ``keys`` (summing to 1)."""
    left, right, top, row_h = 130, 16, 26, 24
    height = top + row_h * len(rows) + 34
    plot_w = width - left - right
    parts = _open(title, width, height)
    for r, (label, shares) in enumerate(rows):
        y = top + r * row_h
        short = label if len(label) <= 20 else label[:19] + "…"
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(short)}<title>{escape(label)}</title></text>')
        x = float(left)
        for key in keys:
            share = shares.get(key, 0.0)
            if share <= 0:
                continue
            w = plot_w * share
            tip = escape(f"{label} · {key}: {share * 100:.1f}%")
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{colours[key]}"><title>{tip}</title></rect>')
            if w > 34:
                parts.append(f'<text x="{x + w / 2:.1f}" y="{y + 16}" text-anchor="middle" fill="#fff">{share * 100:.0f}%</text>')
            x += w
    legend_y = top + row_h * len(rows) + 20
    for i, key in enumerate(keys):
        lx = left + i * 110
        parts.append(f'<rect x="{lx}" y="{legend_y - 9}" width="10" height="10" fill="{colours[key]}"/>')
        parts.append(f'<text x="{lx + 14}" y="{legend_y}">{escape(key)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(
    title: str,
    xs: Sequence[float],
    series: Sequence[Series],
    *,
    percent: bool = False,
    colours: Sequence[str] | None = None,
    x_label: str = "step",
    width: int = 560,
    height: int = 260,
) -> str:
    """Lines over a shared x axis (e.g. training steps); None values break a line."""
    left, right, top, bottom = 52, 150, 26, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    colours = colours or PALETTE
    values = [v for _, vs in series for v in vs if v is not None]
    lo = 0.0 if percent or min(values, default=0.0) >= 0 else -_nice_max(-min(values))
    hi = 1.0 if percent else _nice_max(max(values, default=1.0))
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    x_span = (x_hi - x_lo) or 1.0

    def px(x: float) -> float:
        return left + plot_w * (x - x_lo) / x_span

    def py(v: float) -> float:
        return top + plot_h * (1 - (v - lo) / ((hi - lo) or 1.0))

    parts = _open(title, width, height)
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{_fmt(v, percent)}</text>')
    for x in (x_lo, (x_lo + x_hi) / 2, x_hi):
        parts.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 14}" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>')
    for s, (name, vs) in enumerate(series):
        colour = colours[s % len(colours)]
        runs: list[list[str]] = [[]]
        for x, v in zip(xs, vs):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{px(x):.1f},{py(v):.1f}")
        for points in runs:
            if len(points) == 1:
                cx, cy = points[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>')
            elif points:
                parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="1.8"><title>{escape(name)}</title></polyline>')
    parts += _legend([n for n, _ in series], colours, width - right + 10, top + 10)
    parts.append("</svg>")
    return "\n".join(parts)
