"""Which step a person wants back for a term: where it came from, then where it last changed.

For one prompt term the candidates are every step that holds it. The newest of them used to
win, so a common identifier returned an unrelated ``git commit`` and a class name returned the
agent's own design sketch instead of the file it had read. Candidates are now ranked:

1. origin — the first step whose tool output carried the term, or that read the file the term
   names (the evidence the agent saw); for a file first named by a listing, also its first
   read (the content);
2. latest change — the newest step whose tool call wrote it: an edit or write of that file, or
   arguments that hold the term in a tool that is not a read or a search;
3. mentions — every other step, newest first.

Ranking reads candidate nodes as plain JSON (no hashing); what is finally injected is read
again through ``store.read_node``, which verifies every identity. Scans stop at the first
match from each end, so a term in 137 steps costs a handful of reads. Also decides which steps
the live context already shows (``LiveView``). Stdlib only: runs on the prompt hook's path.
"""

from __future__ import annotations

import json
import re
from typing import Any

from contextfork.cold.identifiers import normalize
from contextfork.cold.layout import StoreLayout

_HEADER = re.compile(r"^\[(assistant|user|system|tool call: [^\]\n]*|tool result: [^\]\n]*)\]$", re.M)
_READ_LIKE = re.compile(
    r"(?i)^(read|view|cat|glob|grep|ls|find|search|rg|list|open|fetch|webfetch|websearch|"
    r"notebookread|todoread|task|bash_output)"
)
_WRITE_LIKE = re.compile(r"(?i)(edit|write|patch|replace|create|insert|apply|notebookedit)")
SCAN_LIMIT = 48  # nodes read from each end before giving up on an origin / a change


class Peek:
    """Unverified reads of node files for ranking, cached for one page-in."""

    def __init__(self, layout: StoreLayout) -> None:
        self.layout = layout
        self.cache: dict[int, dict[str, Any] | None] = {}

    def node(self, step_id: int) -> dict[str, Any] | None:
        if step_id not in self.cache:
            path = self.layout.node_path(step_id)
            try:
                obj = None if path.is_symlink() else json.loads(path.read_bytes())
            except (OSError, ValueError):
                obj = None
            self.cache[step_id] = obj if isinstance(obj, dict) else None
        return self.cache[step_id]


def sections(readable: str) -> list[tuple[str, str]]:
    """(header, body) of a node's readable form: ``assistant``, ``tool call: X``, ``tool
    result: X``… (see cold/readable.py for the layout)."""
    heads = list(_HEADER.finditer(readable))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(readable)
        out.append((m.group(1), readable[m.end() : end]))
    return out


def _pattern(forms: list[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(f) for f in sorted(set(forms), key=len, reverse=True) if f)
    return re.compile(rf"(?<![\w]){alts}(?![\w])" if alts else r"(?!x)x")


def _path_like(form: str) -> bool:
    return "/" in form or "." in form


def read_of(node: dict[str, Any], rx: re.Pattern[str], forms: list[str]) -> bool:
    """The step read (or listed, searched) a file the term names, in its call's arguments."""
    if not any(_path_like(f) for f in forms):
        return False
    for head, body in sections(str(node.get("readable") or "")):
        tool = head[len("tool call: ") :] if head.startswith("tool call: ") else ""
        if tool and _READ_LIKE.match(tool) and rx.search(normalize(body)):
            return True
    return False


def carried(node: dict[str, Any], rx: re.Pattern[str], forms: list[str]) -> bool:
    """The term is in a tool result, or the step read a file the term names."""
    for head, body in sections(str(node.get("readable") or "")):
        if head.startswith("tool result") and rx.search(normalize(body)):
            return True
    return read_of(node, rx, forms)


def changed(node: dict[str, Any], rx: re.Pattern[str]) -> bool:
    """A tool call that writes: its arguments hold the term and the tool is not a read."""
    for head, body in sections(str(node.get("readable") or "")):
        if head.startswith("tool call: "):
            tool = head[len("tool call: ") :]
            if _READ_LIKE.match(tool) and not _WRITE_LIKE.search(tool):
                continue
            if rx.search(normalize(body)):
                return True
    return False


def rank(peek: Peek, candidates: list[int], forms: list[str]) -> list[tuple[str, int]]:
    """Candidates (step ids) for one term, best first, each with its role: ``origin`` (first
    step that carried it), ``read`` (a file's first read, when later than the origin),
    ``change`` (the newest step that wrote it), then ``mention`` (the rest, newest first)."""
    if not candidates:
        return []
    rx = _pattern([normalize(f) for f in forms])
    asc = sorted(candidates)
    out: list[tuple[str, int]] = []
    for sid in asc[:SCAN_LIMIT]:
        node = peek.node(sid)
        if node is not None and carried(node, rx, forms):
            out.append(("origin", sid))
            break
    if any(_path_like(f) for f in forms) and out and not read_of(peek.node(out[0][1]) or {}, rx, forms):
        for sid in asc[:SCAN_LIMIT]:  # the file's content, when a listing named it first
            node = peek.node(sid)
            if sid > out[0][1] and node is not None and read_of(node, rx, forms):
                out.append(("read", sid))
                break
    first = min((s for _, s in out), default=None)
    for sid in reversed(asc[-SCAN_LIMIT:]):
        if first is not None and sid <= first:
            break
        node = peek.node(sid)
        if node is not None and changed(node, rx):
            if all(sid != s for _, s in out):
                out.append(("change", sid))
            break
    held = {s for _, s in out}
    return out + [("mention", s) for s in reversed(asc) if s not in held]


class LiveView:
    """What the harness shows the model right now, in terms of the store's steps.

    ``file`` is the transcript's name; a node folded from it is live when it starts at or after
    the last compaction (``from_offset``), holds a line the harness kept verbatim across it
    (``preserved`` uuids), or — with no compaction — is the transcript's open last step (the
    last exchange). Nodes folded from another file (a fork's parent) are never live here.
    """

    def __init__(
        self, file: str, from_offset: int | None = None, preserved: frozenset[str] = frozenset(),
        copied: frozenset[str] = frozenset(),
    ) -> None:
        self.file = file
        self.from_offset = from_offset
        self.preserved = preserved
        # A fork's live lines copied verbatim from the session it continues (their original
        # uuids): a node of that session whose every line is among them is on screen too.
        self.copied = copied

    def shows(self, node: dict[str, Any] | None) -> bool:
        if node is None:
            return False
        src = node.get("source")
        if not isinstance(src, dict):
            return False
        if src.get("file") != self.file:
            if not self.copied or node.get("content_encoding") != "utf-8":
                return False
            held = {m.decode() for m in _UUID.findall(str(node.get("content", "")).encode())}
            return bool(held) and held <= self.copied
        offsets = src.get("offsets")
        if self.from_offset is None:
            return bool(src.get("open"))
        if isinstance(offsets, list) and offsets and isinstance(offsets[0], int) and (
            offsets[0] >= self.from_offset
        ):
            return True
        if self.preserved and node.get("content_encoding") == "utf-8":
            return any(u in str(node.get("content", "")) for u in self.preserved)
        return False

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "from_offset": self.from_offset, "preserved": len(self.preserved)}


_UUID = re.compile(rb'"uuid":"([^"]+)"')
_PARENT = re.compile(rb'"parentUuid":"([^"]+)"')
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


def live_view(transcript: Any) -> LiveView | None:
    """The live view of a transcript (a ``pathlib.Path``), read from the file itself: after
    its last compaction boundary plus the preserved segment, or its last exchange when it was
    never compacted. None when the file cannot be read."""
    try:
        if transcript.is_symlink() or not transcript.is_file():
            return None
        if transcript.stat().st_size > MAX_TRANSCRIPT_BYTES:
            return None
        data = transcript.read_bytes()
    except OSError:
        return None
    at = data.rfind(b'"compact_boundary"')
    if at < 0:
        return LiveView(transcript.name, copied=_copied(data, 0))
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end
    try:
        boundary = json.loads(data[start:end])
    except ValueError:
        return LiveView(transcript.name, start)
    meta = boundary.get("compactMetadata") if isinstance(boundary, dict) else None
    seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
    preserved: set[str] = set()
    if isinstance(seg, dict) and isinstance(seg.get("tailUuid"), str):
        parents: dict[str, str | None] = {}
        for line in data[:start].split(b"\n"):
            u = _UUID.search(line)
            if u:
                p = _PARENT.search(line)
                parents[u.group(1).decode()] = p.group(1).decode() if p else None
        cur: str | None = seg["tailUuid"]
        while cur is not None and cur in parents and cur not in preserved:
            preserved.add(cur)
            if cur == seg.get("headUuid"):
                break
            cur = parents[cur]
    return LiveView(transcript.name, start, frozenset(preserved), _copied(data, start, preserved))


_FORKED = re.compile(rb'"forkedFrom":\{"sessionId":"[^"]*","messageUuid":"([^"]+)"')


def _copied(data: bytes, start: int, preserved: set[str] | None = None) -> frozenset[str]:
    """Original uuids of a fork's lines the harness shows as they were (no fold stub in them):
    those from byte ``start`` on, and the preserved segment's."""
    from contextfork.forkstub import STUB_PREFIX_BYTES

    if b'"forkedFrom"' not in data:
        return frozenset()
    out: set[str] = set()
    offset = 0
    for line in data.split(b"\n"):
        here, offset = offset, offset + len(line) + 1
        if b'"forkedFrom"' not in line or STUB_PREFIX_BYTES in line:
            continue
        if here < start:
            own = _UUID.search(line)
            if not preserved or own is None or own.group(1).decode() not in preserved:
                continue
        m = _FORKED.search(line)
        if m is not None:
            out.add(m.group(1).decode())
    return frozenset(out)
