"""Write the inspector as a self-contained static site (no CDN, no network, works from file://).

The whole site is built in a staging directory and swapped into place, so a browser (or the
live server) never sees half a site. Pages: the session timeline (paginated), the hot and cold
layers inside it, the packages with their validation and drift, and the replay bill.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.resources import data_dir, render_html_template
from contextfork.svgchart import line_chart
from contextfork.view.lazy import split_blocks, split_cold
from contextfork.view.model import SEARCH_CHARS, SessionView, build

PAGE_SIZE = 100
STATIC = ("view.css", "view.js")


@dataclass
class SiteResult:
    out: Path
    pages: list[str]
    steps: int
    cold_nodes: int
    failed_nodes: int
    packages: int
    seconds: float


def _pages(n: int) -> int:
    return max(1, (n + PAGE_SIZE - 1) // PAGE_SIZE)


def page_name(i: int) -> str:
    return "index.html" if i == 1 else f"timeline-{i:03d}.html"


def page_of(step_index: int) -> str:
    return page_name((step_index - 1) // PAGE_SIZE + 1)


def _context_chart(view: SessionView) -> str:
    """The live window per call (recorded) and the cumulative bill (recorded, else estimated)."""
    window: list[int | None] = [s.window for s in view.steps]
    estimated: list[int | None] = []
    total = 0
    for s in view.steps:
        total += s.tokens
        estimated.append(total)
    bill: list[int | None] = []
    acc = 0
    for s, est in zip(view.steps, estimated, strict=True):
        acc += s.window if s.window is not None else (est or 0)
        bill.append(acc)
    live = line_chart(
        "chart-window", "Context per call (tokens)",
        [("live window (recorded)", window), ("history so far (estimated)", estimated)], "step",
    )  # fmt: skip
    cumulative = line_chart(
        "chart-bill", "Cumulative input billed (tokens)",
        [("recorded where present, else estimated", bill)], "step",
    )  # fmt: skip
    return live + cumulative


def _search_index(view: SessionView) -> Iterator[str]:
    """``search.js`` piece by piece (one step at a time, never the whole index in memory)."""
    yield "window.CF_SEARCH = ["
    for n, s in enumerate(view.steps):
        item = {"s": s.index, "p": page_of(s.index), "t": s.search_text.lower()[:SEARCH_CHARS]}
        yield (", " if n else "") + json.dumps(item, ensure_ascii=False)
    yield "];\n"


def _replay_page(view: SessionView, nav: list[dict[str, str]]) -> str | None:
    if len(view.session.steps) < 2:
        return None
    from contextfork.render.policies import parse_policies
    from contextfork.render.replay import replay

    for step in view.session.steps:  # each policy reads every output: one string each
        for result in step.tool_results:
            result.hold()
    report = replay(view.session, parse_policies("native,base,refold,epoch,mask,compact"))
    series: list[tuple[str, list[int | None]]] = [
        (p.policy, list(p.prompt_per_call)) for p in report.policies
    ]
    chart = line_chart("chart-replay", "Prompt tokens per call, by policy", series, "call")
    return render_html_template(
        "view/replay.html.j2", title="Replay bill", nav=nav, report=report, chart=chart
    )


def _package_pages(
    root: Path | None, nav: list[dict[str, str]], put: Callable[[str, str], None]
) -> list[dict[str, Any]]:
    if root is None:
        return []
    from contextfork.view.packages import package_detail, package_rows

    rows = package_rows(root)
    for row in rows:
        detail = package_detail(root, row)
        put(f"package-{row['id']}.html", render_html_template(
            "view/package.html.j2", title=f"Package {row['id']}", nav=nav, row=row, d=detail
        ))  # fmt: skip
    return rows


def _session_pages(
    view: SessionView, nav: list[dict[str, str]], put: Callable[[str, str | Iterable[str]], None],
    *, with_replay: bool,
) -> None:
    n = _pages(len(view.steps))
    chart = _context_chart(view)
    for i in range(1, n + 1):
        chunk = view.steps[(i - 1) * PAGE_SIZE : i * PAGE_SIZE]
        put(page_name(i), render_html_template(
            "view/timeline.html.j2", title=f"Session {view.session.session_id or ''}", nav=nav,
            view=view, steps=chunk, page=i, pages=[(k, page_name(k)) for k in range(1, n + 1)],
            chart=chart if i == 1 else "", collapse=12,
        ))  # fmt: skip
    put("search.js", _search_index(view))
    if with_replay:
        page = _replay_page(view, nav)
        if page is not None:
            put("replay.html", page)


def build_site(
    session_path: Path | None, root: Path | None, out: Path, *, with_replay: bool = True
) -> SiteResult:
    started = time.perf_counter()
    from contextfork.transcript import load_session

    # A whole-session page: long outputs are read back from the file as each is written.
    session = load_session(session_path, outputs_in_file=True) if session_path is not None else None
    nav = [{"href": "index.html", "label": "Timeline"}]
    if root is not None:
        nav.append({"href": "packages.html", "label": "Packages"})
    if session is not None and with_replay:
        nav.append({"href": "replay.html", "label": "Replay"})
    static = data_dir("templates") / "view" / "static"
    out.parent.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    view: SessionView | None = None
    with atomic.staging_dir(out.parent, prefix=f".staging-{out.name}-") as staged:

        def put(name: str, text: str | Iterable[str]) -> None:
            # Each page goes to disk as it is rendered: holding every page of a long session
            # until the end cost as much memory as the session itself (issue 27).
            data = (text.encode("utf-8") if isinstance(text, str)
                    else (part.encode("utf-8") for part in text))  # fmt: skip
            atomic.write_into(staged, name, data)
            names.append(name)

        if session is not None:
            # Large blocks and cold originals go to files of their own, loaded on expand:
            # each step's as it is viewed.
            def take_out(files: Iterable[tuple[str, bytes]]) -> None:
                for name, data in files:
                    atomic.write_into(staged, name, data)

            view = build(session, root, each=lambda sv: take_out(split_blocks(sv)))
            take_out(split_cold(view.steps))
            _session_pages(view, nav, put, with_replay=with_replay)
        rows = _package_pages(root, nav, put)
        if root is not None:
            packages = render_html_template(
                "view/packages.html.j2", title="Packages", nav=nav, rows=rows
            )
            put("packages.html", packages)
            if view is None:
                put("index.html", packages)
                put("search.js", "window.CF_SEARCH = [];\n")
        for name in STATIC:
            atomic.write_into(staged, f"static/{name}", (static / name).read_bytes())
        atomic.replace_dir(staged, out)
    return SiteResult(
        out=out,
        pages=sorted(names),
        steps=len(view.steps) if view else 0,
        cold_nodes=len(view.cold) if view else 0,
        failed_nodes=sum(1 for c in view.cold.values() if not c.verified) if view else 0,
        packages=len(rows),
        seconds=round(time.perf_counter() - started, 3),
    )
