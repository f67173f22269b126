"""Hand-written SVG charts for the inspector (no plotting dependency, works from file://).

Lines that overlap stay visible: every series has its own dash pattern and marker shape as
well as its colour, is drawn semi-transparent, and can be toggled from the legend (view.js).
"""

from __future__ import annotations

from html import escape

# Colour-blind-safe (Okabe-Ito) with distinct dashes, so lines are told apart without colour.
STYLES = [
    ("#0072B2", ""), ("#D55E00", "6 3"), ("#009E73", "2 2"), ("#CC79A7", "8 3 2 3"),
    ("#E69F00", "1 3"), ("#56B4E9", "10 4"), ("#000000", "4 4"),
]
W, H, L, R, T, B = 860, 300, 70, 20, 36, 40


def _nice_max(v: float) -> int:
    if v <= 0:
        return 1
    n = int(v)
    mag = 10 ** (len(str(max(n, 1))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if n <= m * mag:
            return int(m * mag)
    return n


def _fmt(v: float) -> str:
    return f"{v / 1000:.0f}k" if v >= 10_000 else f"{v:,.0f}"


def line_chart(
    chart_id: str, title: str, series: list[tuple[str, list[int | None]]], x_label: str
) -> str:
    """Series of equal length; ``None`` leaves a gap (e.g. a step with no recorded usage)."""
    n = max((len(s) for _, s in series), default=1)
    ymax = _nice_max(max((v for _, s in series for v in s if v is not None), default=1))
    pw, ph = W - L - R, H - T - B

    def x(i: int) -> float:
        return L + pw * i / max(1, n - 1)

    def y(v: float) -> float:
        return T + ph - ph * v / ymax

    out = [
        f'<svg id="{chart_id}" class="chart" role="img" aria-labelledby="{chart_id}-t" '
        f'viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
        f'<text x="{L}" y="20" class="chart-title">{escape(title)}</text>',
    ]
    for k in range(5):
        tick = ymax * k / 4
        out.append(f'<line x1="{L}" y1="{y(tick):.1f}" x2="{L + pw}" y2="{y(tick):.1f}" class="grid"/>')
        out.append(f'<text x="{L - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{_fmt(tick)}</text>')
    for k in range(5):
        i = (n - 1) * k // 4
        out.append(f'<text x="{x(i):.1f}" y="{T + ph + 16}" text-anchor="middle">{i + 1}</text>')
    out.append(f'<text x="{L + pw / 2:.1f}" y="{H - 6}" text-anchor="middle">{escape(x_label)}</text>')
    for j, (name, values) in enumerate(series):
        color, dash = STYLES[j % len(STYLES)]
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
    out.append("</svg>")
    legend = "".join(
        f'<label class="legend-item"><input type="checkbox" checked data-chart="{chart_id}" '
        f'data-series="{escape(name)}"> <span class="swatch" style="border-top:3px '
        f'{"dashed" if STYLES[j % len(STYLES)][1] else "solid"} {STYLES[j % len(STYLES)][0]}"></span>'
        f" {escape(name)}</label>"
        for j, (name, _) in enumerate(series)
    )
    return f'<figure class="chart-box">{"".join(out)}<figcaption class="legend">{legend}</figcaption></figure>'
