"""Charts keep overlapping lines apart: each series its own colour and dash pattern."""

from __future__ import annotations

import re

from contextfork.svgchart import line_chart, svg_chart


def _styles(svg: str) -> list[tuple[str, str]]:
    out = []
    for group in re.findall(r'<g class="series"[^>]*>(.*?)</g>', svg, flags=re.S):
        color = re.search(r'stroke="(#[0-9A-Fa-f]{6})"', group)
        dash = re.search(r'stroke-dasharray="([^"]+)"', group)
        out.append((color.group(1) if color else "", dash.group(1) if dash else "solid"))
    return out


def test_identical_series_are_drawn_with_distinct_dashes_and_colours() -> None:
    same = [1, 5, 9, 12]
    series = [(name, list(same)) for name in ("native", "base", "compact", "refold")]
    styles = _styles(svg_chart("c", "t", series, "x", standalone=True))
    assert len(styles) == 4 and len(set(styles)) == 4
    assert len({d for _, d in styles}) == 4  # told apart without colour too


def test_standalone_svg_carries_its_own_legend_and_the_page_chart_a_toggle() -> None:
    series = [("a", [1, 2]), ("b", [2, None])]
    svg = svg_chart("c", "t", series, "x", standalone=True)
    assert svg.startswith("<svg") and ">a</text>" in svg and ">b</text>" in svg
    page = line_chart("c", "t", series, "x")
    assert page.count('type="checkbox"') == 2 and 'data-series="b"' in page


def test_axis_ticks_read_in_short_units_at_every_scale() -> None:
    for top, want in ((1_000, "1,000"), (5_000, "5,000"), (50_000, "50k"), (2_500_000, "2.5M"),
                      (20_000_000, "20M"), (5_000_000_000, "5B")):  # fmt: skip
        values: list[int | None] = [0, top]
        svg = svg_chart("c", "t", [("a", values)], "x")
        ticks = re.findall(r'text-anchor="end">([^<]+)</text>', svg)
        assert ticks[0] == "0" and ticks[-1] == want, ticks
        assert not any(re.search(r"\d{4,}k", t) for t in ticks)  # never "20000k"
        units = {t[-1] for t in ticks[1:]}
        assert len(units) == 1, ticks  # one unit per axis: never "5,000" beside "10k"
