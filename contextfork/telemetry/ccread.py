"""One pass over a Claude Code transcript for ``status``: every line parsed once, kept lean.

The full reader (``contextfork.transcript``) builds the pydantic ``Session``; ``status`` needs
only its figures, so this pass keeps of each line what the live-chain walk and the step cut
read (``Line``) and feeds the billing scan (``scan._feed``) from the same parse, instead of a
second read. Lines are parsed by pydantic-core's JSON parser (twice as fast as ``json``); any
line it refuses is handed to ``json`` exactly as the full reader does (UTF-8 decode, then
``json.loads``), so the same lines parse and the same ones count as malformed.

Anything this pass does not reproduce line for line raises ``Unsupported`` and ``status`` takes
the full path: a byte order mark, a line over the read bound, a sidechain (subagent) line in
the main file, ids that are not strings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from contextfork.inputfile import BOM, max_line_bytes, open_regular
from contextfork.telemetry.scan import ScanState, feed_line

_CHUNK = 1 << 22
_CONVERSATION = frozenset({"user", "assistant", "system"})
_SPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() strips


class Unsupported(Exception):
    """The fast pass cannot promise the full path's answer for this file: use the full path."""


class Line:
    """What ``status`` keeps of one parsed line (the object only for conversation lines)."""

    __slots__ = ("branch", "cwd", "forked", "kind", "obj", "parent", "parent_uuid", "uuid")

    def __init__(self, obj: dict[str, Any]) -> None:
        kind, uuid, pu = check(obj)
        if obj.get("isSidechain"):
            raise Unsupported("sidechain lines in the main file")
        self.kind: str | None = kind
        self.uuid: str | None = uuid
        self.parent_uuid: str | None = pu
        self.parent: Any = pu or obj.get("logicalParentUuid")
        self.forked = isinstance(obj.get("forkedFrom"), dict)
        self.cwd: Any = obj.get("cwd")
        self.branch: Any = obj.get("gitBranch")
        self.obj: dict[str, Any] | None = None
        if kind in _CONVERSATION:
            obj.pop("toolUseResult", None)  # the UI's copy of a tool's output
            self.obj = obj


def check(obj: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(type, uuid, parentUuid) of a line. The full path hashes these and an assistant's
    message id (sets, frozensets): an unhashable one is its failure to report, not ours."""
    kind, uuid, pu = obj.get("type"), obj.get("uuid"), obj.get("parentUuid")
    for v in (kind, uuid, pu):
        if v is not None and type(v) is not str:
            raise Unsupported("a non-string type, uuid or parentUuid")
    if kind == "assistant":
        msg = obj.get("message")
        mid = msg.get("id") if isinstance(msg, dict) else None
        if mid is not None and type(mid) is not str:
            raise Unsupported("a non-string message id")
    return kind, uuid, pu


class Read:
    """The lines of one file, its malformed count, session-wide fields and its billing scan."""

    def __init__(self, *, subagent: bool) -> None:
        self.subagent = subagent  # a subagent's file: only its billing and records are read
        self.lines: list[Line] = []
        self.records = 0  # lines that parsed to an object
        self.malformed = 0
        self.session_id: Any = None  # the first truthy ``sessionId``, whatever its type
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.billing = ScanState()


def _parse(raw: bytes) -> Any:
    try:
        return from_json(raw)
    except Exception:  # noqa: BLE001 - refused: ``json`` has the last word, as in the full path
        return json.loads(raw.decode("utf-8"))


def read(path: Path, *, subagent: bool = False) -> Read:
    """Every line of ``path`` (raises ``Unsupported``, or the full reader's errors)."""
    out = Read(subagent=subagent)
    limit = max_line_bytes()
    seen: set[str] = set()
    rest = b""
    first = True
    with open_regular(path, "transcript") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            if first:
                first = False
                if chunk.startswith(BOM[: len(chunk)]):
                    raise Unsupported("a byte order mark")
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            if len(rest) > limit:
                raise Unsupported("a line over the read bound")
            for raw in parts:
                _line(out, seen, raw, limit, complete=True)
        if rest:
            _line(out, seen, rest, limit, complete=False)
    return out


def _line(out: Read, seen: set[str], raw: bytes, limit: int, *, complete: bool) -> None:
    if len(raw) > limit:
        raise Unsupported("a line over the read bound")
    if not raw or (raw[0] in _SPACE and not raw.strip()):  # strip() only where it can matter
        return
    try:
        obj = _parse(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        if complete:
            out.malformed += 1
            feed_line(out.billing, seen, raw)  # the scan reads bytes: it may still parse
        return  # an unterminated last line is still being written
    if complete and (b'"usage"' in raw or b"compact_boundary" in raw):
        feed_line(out.billing, seen, raw, obj)
    if not isinstance(obj, dict):
        out.malformed += 1
        return
    out.records += 1
    if out.subagent:
        check(obj)
        return
    out.lines.append(Line(obj))
    if out.session_id is None and obj.get("sessionId"):
        out.session_id = obj["sessionId"]
    ts = obj.get("timestamp")
    if isinstance(ts, str):
        if out.first_ts is None or ts < out.first_ts:
            out.first_ts = ts
        if out.last_ts is None or ts > out.last_ts:
            out.last_ts = ts
