"""Prompt size per call for each policy, as a hand-written SVG (and HTML around it).

matplotlib is not a dependency; a polyline chart needs none. PNG would need a rasterizer and a
font, so ``.png`` is refused with a clear error instead of pulling in a heavy dependency.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from contextfork import atomic
from contextfork.errors import UsageError
from contextfork.render.replay import ReplayReport

COLORS = {"native": "#8c564b", "base": "#444444", "refold": "#1f77b4", "epoch": "#2ca02c", "mask": "#ff7f0e",
          "compact": "#d62728"}
W, H, L, R, T, B = 900, 420, 70, 140, 30, 45


def _nice_max(v: int) -> int:
    if v <= 0:
        return 1
    mag = 10 ** (len(str(v)) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * mag:
            return int(m * mag)
    return v  # pragma: no cover


def svg(report: ReplayReport) -> str:
    series = [(p.policy, p.prompt_per_call) for p in report.policies]
    n = max((len(s) for _, s in series), default=1)
    ymax = _nice_max(max((max(s, default=0) for _, s in series), default=1))
    pw, ph = W - L - R, H - T - B

    def x(i: int) -> float:
        return L + (pw * i / max(1, n - 1))

    def y(v: int) -> float:
        return T + ph - ph * v / ymax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="14">Prompt tokens per call · '
           f'{escape(Path(report.transcript or "session").name)}</text>']
    for k in range(5):
        v = ymax * k // 4
        yy = y(v)
        out.append(f'<line x1="{L}" y1="{yy:.1f}" x2="{L + pw}" y2="{yy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{yy + 4:.1f}" text-anchor="end">{v:,}</text>')
    for k in range(5):
        i = (n - 1) * k // 4
        out.append(f'<text x="{x(i):.1f}" y="{T + ph + 18}" text-anchor="middle">{i + 1}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 8}" text-anchor="middle">call (step)</text>')
    for j, (name, s) in enumerate(series):
        color = COLORS.get(name, "#9467bd")
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{pts}">'
                   f'<title>{escape(name)}</title></polyline>')
        ly = T + 10 + 20 * j
        out.append(f'<line x1="{W - R + 12}" y1="{ly}" x2="{W - R + 36}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="3"/>')
        out.append(f'<text x="{W - R + 42}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def html(report: ReplayReport) -> str:
    rows = "".join(
        f"<tr><td>{escape(p.policy)}</td><td>{p.prompt_tokens:,}</td><td>{p.cached_share:.3f}</td>"
        f"<td>{p.peak_prompt:,}</td><td>{p.rewrites}</td><td>${p.cost_usd:.4f}</td>"
        f"<td>{'' if p.carriage is None else f'{p.carriage:.3f}'}</td></tr>"
        for p in report.policies
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>contextfork replay</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 10px;text-align:right}</style>"
        f"</head><body>{svg(report)}<table><tr><th>policy</th><th>prompt tokens</th>"
        "<th>cached share</th><th>peak</th><th>rewrites</th><th>cost</th><th>carriage</th></tr>"
        f"{rows}</table></body></html>\n"
    )


def check_plot_path(path: Path) -> None:
    """Refuse an unsupported format before any work is done."""
    suffix = path.suffix.lower()
    if suffix in (".svg", ".html", ".htm"):
        return
    if suffix == ".png":
        raise UsageError(
            "--plot .png is not supported (it would need matplotlib or a rasterizer)",
            hint="use --plot out.svg or out.html",
        )
    raise UsageError(f"--plot {path.name}: unknown format", hint="use .svg or .html")


def write_plot(report: ReplayReport, path: Path) -> str:
    check_plot_path(path)
    if path.suffix.lower() == ".svg":
        atomic.write_text(path, svg(report))
    else:
        atomic.write_text(path, html(report))
    return str(path)
