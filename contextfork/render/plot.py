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


def svg(report: ReplayReport) -> str:
    """Prompt tokens per call, one line per policy (shared chart code: dashes keep overlapping
    lines apart)."""
    from contextfork.svgchart import svg_chart

    series: list[tuple[str, list[int | None]]] = [
        (p.policy, list(p.prompt_per_call)) for p in report.policies
    ]
    title = f"Prompt tokens per call · {Path(report.transcript or 'session').name}"
    return svg_chart("replay", title, series, "call (step)", standalone=True)


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
    text = svg(report) if path.suffix.lower() == ".svg" else html(report)
    atomic.write_output(path, text.encode("utf-8"))  # the umask decides, as for any output
    return str(path)
