"""Hand-written SVG line charts: the inspector's pages and `replay --plot` (no plotting
dependency; works from file://).

Lines that overlap stay visible: every series has its own dash pattern as well as its colour
and is drawn semi-transparent; in the inspector the legend toggles it (view.js), a standalone
SVG draws its legend inside.
"""

from __future__ import annotations

from html import escape

# Colour-blind-safe (Okabe-Ito) with distinct dashes, so lines are told apart without colour.
STYLES = [
    ("#0072B2", ""), ("#D55E00", "6 3"), ("#009E73", "2 2"), ("#CC79A7", "8 3 2 3"),
    ("#E69F00", "1 3"), ("#56B4E9", "10 4"), ("#000000", "4 4"),
]
W, H, L, R, T, B = 860, 300, 70, 20, 36, 40
LEGEND_W = 150  # right margin of a standalone chart, for the legend inside it


def _nice_max(v: float) -> int:
    if v <= 0:
        return 1
    n = int(v)
    mag = 10 ** (len(str(max(n, 1))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if n <= m * mag:
            return int(m * mag)
    return n


def _fmt(v: float, top: float | None = None) -> str:
    """An axis tick in short units: 950, 2,500, 20k, 1.25M, 3B. ``top`` (the axis maximum)
    picks one unit for every tick of an axis, so it never reads "5,000" beside "10k"."""
    if v == 0:
        return "0"
    ref = abs(top if top is not None else v)
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if round(ref / scale, 2) >= 1 and (unit != "k" or ref >= 10_000):
            short = f"{v / scale:.2f}".rstrip("0").rstrip(".")
            return f"{short}{unit}"
    return f"{v:,.0f}"


Series = list[tuple[str, list[int | None]]]


def style(j: int) -> tuple[str, str]:
    return STYLES[j % len(STYLES)]


def svg_chart(
    chart_id: str, title: str, series: Series, x_label: str, *, standalone: bool = False
) -> str:
    """Series of equal length; ``None`` leaves a gap (e.g. a step with no recorded usage).

    ``standalone``: a complete SVG file (size, white background, legend drawn inside)."""
    n = max((len(s) for _, s in series), default=1)
    ymax = _nice_max(max((v for _, s in series for v in s if v is not None), default=1))
    right = R + (LEGEND_W if standalone else 0)
    width = W + (LEGEND_W if standalone else 0)
    pw, ph = width - L - right, H - T - B

    def x(i: int) -> float:
        return L + pw * i / max(1, n - 1)

    def y(v: float) -> float:
        return T + ph - ph * v / ymax

    size = f'width="{width}" height="{H}" font-family="sans-serif" font-size="12" ' if standalone else ""
    out = [
        f'<svg id="{chart_id}" class="chart" role="img" aria-labelledby="{chart_id}-t" '
        f'{size}viewBox="0 0 {width} {H}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
    ]
    if standalone:
        out.append(f'<rect width="{width}" height="{H}" fill="white"/>')
    out.append(f'<text x="{L}" y="20" class="chart-title" font-size="14">{escape(title)}</text>')
    for k in range(5):
        tick = ymax * k / 4
        out.append(f'<line x1="{L}" y1="{y(tick):.1f}" x2="{L + pw}" y2="{y(tick):.1f}" '
                   'class="grid" stroke="#d0d7de"/>')
        out.append(f'<text x="{L - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{_fmt(tick, ymax)}</text>')
    for k in range(5):
        i = (n - 1) * k // 4
        out.append(f'<text x="{x(i):.1f}" y="{T + ph + 16}" text-anchor="middle">{i + 1}</text>')
    out.append(f'<text x="{L + pw / 2:.1f}" y="{H - 6}" text-anchor="middle">{escape(x_label)}</text>')
    for j, (name, values) in enumerate(series):
        color, dash = style(j)
        runs: list[list[str]] = [[]]
        for i, v in enumerate(values):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{x(i):.1f},{y(v):.1f}")
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="series" data-series="{escape(name)}">')
        for pts in runs:
            if len(pts) == 1:
                cx, cy = pts[0].split(",")
                out.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{color}"/>')
            elif pts:
                out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" '
                           f'stroke-width="2" stroke-opacity="0.85"{dash_attr}/>')  # fmt: skip
        out.append("</g>")
        if standalone:
            ly = T + 10 + 20 * j
            out.append(f'<line x1="{L + pw + 16}" y1="{ly}" x2="{L + pw + 44}" y2="{ly}" '
                       f'stroke="{color}" stroke-width="3"{dash_attr}/>')
            out.append(f'<text x="{L + pw + 50}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out) if not standalone else "\n".join(out) + "\n"


def line_chart(chart_id: str, title: str, series: Series, x_label: str) -> str:
    """The inspector's chart: the SVG in a figure with a legend whose boxes toggle a series."""
    legend = "".join(
        f'<label class="legend-item"><input type="checkbox" checked data-chart="{chart_id}" '
        f'data-series="{escape(name)}"> <span class="swatch" style="border-top:3px '
        f'{"dashed" if style(j)[1] else "solid"} {style(j)[0]}"></span>'
        f" {escape(name)}</label>"
        for j, (name, _) in enumerate(series)
    )
    svg = svg_chart(chart_id, title, series, x_label)
    return f'<figure class="chart-box">{svg}<figcaption class="legend">{legend}</figcaption></figure>'
