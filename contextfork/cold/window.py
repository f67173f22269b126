"""Verified windows: the lines of a node around the prompt's terms, like ``grep -C``.

A Claude Code evidence node is ~7k tokens; under a 3,000-token budget it used to come back as a
one-line summary without the term the prompt asked about. A window instead delivers the region
that holds the term, with its byte offset, length and SHA-256 so the slice can be checked
against the node it came from. Runs on the prompt hook's path: stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextfork.cold.identifiers import normalize
from contextfork.hashing import sha256_bytes


@dataclass(frozen=True)
class Window:
    offset: int  # bytes into the node's readable text (UTF-8)
    length: int  # bytes
    sha256: str  # of exactly those bytes
    text: str
    terms: tuple[str, ...]  # the normalized terms this window holds


def _line_spans(data: bytes) -> list[tuple[int, int]]:
    spans, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        spans.append((start, end))
        start = end
    return spans


def _pattern(term: str) -> re.Pattern[str]:
    """The term as a whole token: ``port`` must not match inside ``support``."""
    return re.compile(rf"(?<!\w){re.escape(term)}(?!\w)")


def find_windows(
    text: str, terms: list[str], *, context: int = 3, max_bytes: int = 4000
) -> list[Window]:
    """Windows around every line that contains a term, merged when they touch, best first.

    Terms are matched on normalized text (the recall index's NFC + casefold), so the window
    finds what the index matched. Windows holding more distinct terms come first; the caller
    keeps as many as fit its budget. A single window never exceeds ``max_bytes`` (it is cut at
    a line end, or mid-line on a UTF-8 boundary for one huge line).
    """
    data = text.encode("utf-8")
    spans = _line_spans(data)
    wanted = {t: _pattern(t) for t in dict.fromkeys(normalize(t) for t in terms) if t}
    hits: list[tuple[int, set[str]]] = []
    for i, (a, b) in enumerate(spans):
        line = normalize(data[a:b].decode("utf-8", errors="replace"))
        found = {t for t, rx in wanted.items() if rx.search(line)}
        if found:
            hits.append((i, found))
    if not hits:
        return []
    groups: list[tuple[int, int, set[str]]] = []
    for i, found in hits:
        lo, hi = max(0, i - context), min(len(spans) - 1, i + context)
        if groups and lo <= groups[-1][1] + 1:
            g = groups[-1]
            groups[-1] = (g[0], max(g[1], hi), g[2] | found)
        else:
            groups.append((lo, hi, set(found)))
    out: list[Window] = []
    for lo, hi, found in groups:
        start, end = spans[lo][0], spans[hi][1]
        if end - start > max_bytes:
            start, end = _clip(data, spans, lo, hi, found, max_bytes)
        chunk = data[start:end]
        out.append(Window(start, end - start, sha256_bytes(chunk), chunk.decode("utf-8"),
                          tuple(sorted(found))))  # fmt: skip
    out.sort(key=lambda w: (-len(w.terms), w.offset))
    return out


def _clip(
    data: bytes, spans: list[tuple[int, int]], lo: int, hi: int, found: set[str], max_bytes: int
) -> tuple[int, int]:
    """Centre an oversized group on its first matching line, cut to ``max_bytes``."""
    for i in range(lo, hi + 1):
        a, b = spans[i]
        line = normalize(data[a:b].decode("utf-8", errors="replace"))
        if any(_pattern(t).search(line) for t in found):
            break
    centre = (a + b) // 2
    start = max(spans[lo][0], centre - max_bytes // 2)
    end = min(spans[hi][1], start + max_bytes)
    while start > 0 and (data[start] & 0xC0) == 0x80:  # never split a UTF-8 sequence
        start += 1
    while end < len(data) and (data[end] & 0xC0) == 0x80:
        end -= 1
    return start, end


def verify_window(readable: str, window: Window) -> bool:
    """True when the window is exactly the bytes at its offset in the node's readable text."""
    chunk = readable.encode("utf-8")[window.offset : window.offset + window.length]
    return len(chunk) == window.length and sha256_bytes(chunk) == window.sha256
