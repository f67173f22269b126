"""One pass over a Claude Code transcript for ``status``: every line parsed once, kept lean.

The full reader (``contextfork.transcript``) builds the pydantic ``Session``; ``status`` needs
only its figures, so this pass keeps of each line what the live-chain walk and the step cut
read (``Line``) and feeds the billing scan (``scan._feed``) from the same parse, instead of a
second read. Lines are decoded by msgspec into only the fields read (``ccstruct``: five times
as fast as ``json``, which builds every field); any line it cannot promise to read as ``json``
does is handed to ``json`` exactly as the full reader does (UTF-8 decode, then ``json.loads``),
so the same lines parse and the same ones count as malformed.

Anything this pass does not reproduce line for line raises ``Unsupported`` and ``status`` takes
the full path: a byte order mark, a line over the read bound, a sidechain (subagent) line in
the main file, ids that are not strings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.inputfile import BOM, max_line_bytes, open_regular
from contextfork.telemetry import ccstruct
from contextfork.telemetry.ccline import Line, Unsupported, check
from contextfork.telemetry.scan import ScanState, TimeSpan, feed_line

__all__ = ["Line", "Read", "Unsupported", "finish", "read"]

_CHUNK = 1 << 22
_SPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() strips: such a line goes to json


class Read(TimeSpan):
    """The lines of one file, its malformed count, session-wide fields and its billing scan;
    ``offset``: the bytes of complete lines consumed, ``tail``: an unterminated last line."""

    def __init__(self, *, subagent: bool) -> None:
        self.subagent = subagent  # a subagent's file: only its billing and records are read
        self.lines: list[Line] = []
        self.records = 0  # lines that parsed to an object
        self.malformed = 0
        self.session_id: Any = None  # the first truthy ``sessionId``, whatever its type
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.billing = ScanState()
        self.offset = 0
        self.tail = b""
        self.fp: str | None = None  # SHA-256 of the ``offset`` bytes, when the cache knows it


def read(path: Path, *, subagent: bool = False, resume: Read | None = None) -> Read:
    """Every complete line of ``path`` (from ``resume.offset`` on, into ``resume``), the last
    unterminated one kept in ``tail`` for ``finish``. Raises ``Unsupported``, or the full
    reader's errors."""
    out = resume or Read(subagent=subagent)
    limit = max_line_bytes()
    st = out.billing
    seen = set(st.message_ids) | set(st.inherited_ids)  # as ``scan.scan`` resumes
    rest = b""
    first = out.offset == 0
    with open_regular(path, "transcript") as fh:
        fh.seek(out.offset)
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            out.offset += len(chunk)
            if first:
                first = False
                if chunk.startswith(BOM[: len(chunk)]):
                    raise Unsupported("a byte order mark")
            parts = chunk.split(b"\n")
            parts[0] = rest + parts[0]  # (not ``rest + chunk``: a copy of the chunk)
            rest = parts.pop()
            if len(rest) > limit:
                raise Unsupported("a line over the read bound")
            # every line but the first lies inside ``chunk``: one search for a run of digits
            # too long for ``int`` in the chunk stands for one per line
            _lines(out, seen, parts, limit, digits=ccstruct.long_digits(chunk))
    out.offset -= len(rest)
    out.tail = rest
    return out


def finish(out: Read) -> Read:
    """The unterminated last line: a record if it parses, never billed (the scan's way)."""
    rest, out.tail = out.tail, b""
    if rest:
        if len(rest) > max_line_bytes():
            raise Unsupported("a line over the read bound")
        obj = _slow(out, set(), rest, complete=False)
        if obj is not None:
            _lines(out, set(), [], 0, tail=obj)
    return out


def _lines(
    out: Read, seen: set[str], parts: list[bytes], limit: int, tail: dict[str, Any] | None = None,
    *, digits: bool = True,
) -> None:
    """Complete lines (or one parsed ``tail``) into ``out``: this loop is most of the pass.
    Lines are decoded by msgspec (``ccstruct``) when it can promise the same ``Line`` and
    billing; any other line by ``json``. ``digits=False``: no line but the first can hold a
    run of digits too long for ``int``."""
    if tail is not None:
        _record(out, tail)
        return
    lines, sub, billing = out.lines, out.subagent, out.billing
    decode, line_of, feed = ccstruct.decode, ccstruct.line, ccstruct.feed
    first = parts[0] if parts else None
    for raw in parts:
        rec = (decode(raw, digits=digits or raw is first)
               if raw and raw[0] not in _SPACE and len(raw) <= limit else None)  # fmt: skip
        if rec is None:
            obj = _complete(out, seen, raw, limit)
            if obj is not None:
                _record(out, obj)
            continue
        msg = rec.message
        if msg is not None and msg.usage is not None and b'"usage"' in raw:
            # a line with no usage only moves the scan's timestamps, session id and cwd,
            # which ``status`` does not read: not fed (the search would cost more)
            feed(billing, seen, rec)  # ``feed_line(billing, seen, raw, scan_obj(rec))``
        out.records += 1
        if sub:  # ids are strings or None by the struct's types: ``check`` passes
            continue
        lines.append(line_of(rec))
        if out.session_id is None and rec.sessionId:
            out.session_id = rec.sessionId
        ts = rec.timestamp
        if ts is not None:
            out.saw(ts)


def _record(out: Read, obj: dict[str, Any]) -> None:
    """One line parsed by ``json`` into ``out``."""
    out.records += 1
    if out.subagent:
        check(obj)
        return
    out.lines.append(Line.of(obj))
    if out.session_id is None and obj.get("sessionId"):
        out.session_id = obj["sessionId"]
    ts = obj.get("timestamp")
    if type(ts) is str:
        out.saw(ts)


def _complete(out: Read, seen: set[str], raw: bytes, limit: int) -> dict[str, Any] | None:
    """A complete line's object (None: blank or malformed), its usage fed to the billing."""
    if len(raw) > limit:
        raise Unsupported("a line over the read bound")
    return _slow(out, seen, raw, complete=True)


def _slow(out: Read, seen: set[str], raw: bytes, *, complete: bool) -> dict[str, Any] | None:
    """One line as the full reader reads it (UTF-8, then ``json``): the object if it is one;
    else it is counted as malformed (a complete line) or left to be finished (the last one)."""
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        if complete:
            out.malformed += 1
            feed_line(out.billing, seen, raw)  # the scan reads bytes: it may still parse
        return None
    if complete:
        feed_line(out.billing, seen, raw, obj)
    if not isinstance(obj, dict):
        out.malformed += 1
        return None
    return obj
