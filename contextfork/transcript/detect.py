"""Tell the transcript formats apart from their first lines, without reading the whole file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from contextfork.errors import UsageError
from contextfork.inputfile import open_regular
from contextfork.transcript._jsonl import iter_lines

Format = Literal["claude-code", "codex", "pi", "mini-swe-agent", "plain"]

_SNIFF_LINES = 50
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_PI_TYPES = frozenset(
    {"session", "message", "model_change", "thinking_level_change", "compaction",
     "branch_summary", "custom", "label", "custom_message"}
)


def _line_format(obj: dict[str, Any]) -> Format | None:
    from contextfork.transcript import claude_code

    kind = obj.get("type")
    if type(kind) is not str:  # a list or dict cannot be looked up (and names no format)
        kind = None
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if claude_code.looks_like(obj):
        return "claude-code"
    if kind in _PI_TYPES and "payload" not in obj:
        if kind == "session" and ("cwd" in obj or "version" in obj):
            return "pi"
        msg = obj.get("message")
        if kind == "message" and isinstance(msg, dict) and "role" in msg and "uuid" not in obj:
            return "pi"
        if kind != "message" and "uuid" not in obj:
            return "pi"
    return None


def _first_char(path: Path) -> bytes:
    for _lineno, _off, raw, _complete in iter_lines(path):
        if raw is None:
            return b"?"  # an over-long first line: let the line sniffing judge the file
        stripped = raw.lstrip()
        if stripped:
            return stripped[:1]
    return b""


def detect_format(path: Path) -> Format:
    """The adapter for ``path``; a file no adapter recognises is one clear error."""
    first = _first_char(path)
    if not first:
        raise UsageError(f"{path}: empty file, not a transcript")
    if first == b"[":
        return "plain"
    bad_line: int | None = None
    seen_object = False
    for lineno, _off, raw, complete in iter_lines(path):
        if lineno > _SNIFF_LINES:
            break
        if raw is None:
            bad_line = bad_line or lineno
            continue
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            if not complete:
                break
            bad_line = bad_line or lineno
            # A pretty-printed JSON document starts with a lone "{": not JSONL at all.
            if lineno == 1 and raw.strip() == b"{":
                return _whole_json_format(path)
            continue
        if not isinstance(obj, dict):
            bad_line = bad_line or lineno
            continue
        seen_object = True
        fmt = _line_format(obj)
        if fmt is not None:
            return fmt
        if lineno == 1 and ("messages" in obj):
            return _whole_json_format(path)
    if seen_object:
        raise UsageError(
            f"{path}: unknown transcript format (no Claude Code, Codex, pi, mini-swe-agent or "
            "chat-array record in the first lines)"
        )
    where = f"line {bad_line}: " if bad_line else ""
    raise UsageError(f"{path}: {where}not JSON or JSONL, cannot read it as a transcript")


def _whole_json_format(path: Path) -> Format:
    try:
        with open_regular(path, "transcript") as fh:
            head = fh.read(1 << 16)
    except OSError as err:
        raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None
    if path.name.endswith(".traj.json") or b'"trajectory_format"' in head or b'"info"' in head:
        return "mini-swe-agent"
    # {"messages": [...]} (a chat request body); the plain adapter refuses anything else.
    return "plain"
