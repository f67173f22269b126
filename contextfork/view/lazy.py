"""Large payloads leave the pages: each goes to its own small script the page loads on expand.

A timeline page holds a hundred steps; inline, their big tool outputs and the stored originals
of the cold store made page 1 of a 2.8 MB session 2.2 MB. A block over ``LAZY_BYTES`` keeps a
preview in the page and its full text moves to ``blocks/b-<step>-<n>.js``; every cold node's
bytes (shown only when revealed) move to ``cold/step_<id>.js``; the search index
(``search.js``) loads when the search box is first used. Each file is a script (``CF_LAZY[path] = ...``), not JSON to
fetch: a browser loads a ``<script src>`` from ``file://`` where it refuses ``fetch``, so the
static site keeps working without a server, and ``view --serve`` serves the same files.

The browser still re-checks a cold node's SHA-256 against the hash printed in the page, so a
per-node file that was changed after the build shows as a mismatch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from contextfork.view.model import StepView

LAZY_BYTES = 8 * 1024
PREVIEW_LINES = 12
PREVIEW_CHARS = 1_500


def _script(path: str, value: str) -> bytes:
    key = json.dumps(path)
    body = json.dumps(value, ensure_ascii=True)  # pure ASCII: no U+2028 or encoding surprises
    return (f"window.CF_LAZY = window.CF_LAZY || {{}};\nwindow.CF_LAZY[{key}] = {body};\n"
            ).encode("ascii")  # fmt: skip


def _preview(text: str) -> str:
    return "\n".join(text.split("\n", PREVIEW_LINES)[:PREVIEW_LINES])[:PREVIEW_CHARS]


def split_blocks(st: StepView) -> Iterator[tuple[str, bytes]]:
    """Mark each block of ``st`` (``id``, and ``lazy``/``preview``/``kb`` when it is large);
    yields the files of its large ones, whose text the step then lets go: a view is built a
    step at a time, and the texts of every step held at once were the session's outputs over
    again (issue 27)."""
    for i, b in enumerate(st.blocks, start=1):
        b["id"] = f"b-{st.index}-{i}"
        size = len(b["text"].encode("utf-8"))
        if size > LAZY_BYTES:
            path = f"blocks/{b['id']}.js"
            yield path, _script(path, b["text"])
            b["lazy"], b["preview"], b["kb"] = path, _preview(b["text"]), round(size / 1024)
            del b["text"]  # in its file; the page shows the preview


def split_cold(steps: list[StepView]) -> Iterator[tuple[str, bytes]]:
    """Mark each cold node (``src``) of ``steps``; yields its file (its bytes are read from the
    node file only here, one node at a time)."""
    for st in steps:
        node = st.cold
        if node is not None and node.src is None:  # shown only on "Reveal": always loaded then
            path = f"cold/step_{node.step_id:06d}.js"
            yield path, _script(path, node.content_b64)
            node.src = path
