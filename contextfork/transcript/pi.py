"""pi coding agent session JSONL → ``Session``.

Newer pi sessions are a tree (``id``/``parentId``; ``/tree`` and ``/fork`` leave branches), so
the live conversation is the path from the newest entry to the root. Older sessions have no ids
and are simply linear. Every assistant message is one model call, so one step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonl import Record, read_records, require_records
from contextfork.transcript._steps import StepBuilder, str_or, timestamps, usage_fields
from contextfork.transcript.model import (
    Block,
    RawLine,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from contextfork.transcript.source import SourceFile


def _assistant_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(role="assistant", text=content)]
    out: list[Block] = []
    for c in content if isinstance(content, list) else []:
        if not isinstance(c, dict):
            continue
        kind = c.get("type")
        if kind == "text" and isinstance(c.get("text"), str):
            out.append(TextBlock(role="assistant", text=c["text"]))
        elif kind == "thinking":
            out.append(ThinkingBlock(text=str(c.get("thinking") or "")))
        elif kind == "toolCall":
            args = c.get("arguments")
            out.append(
                ToolCall(
                    id=str(c.get("id") or ""), name=str(c.get("name") or ""),
                    input=args if isinstance(args, dict) else {"arguments": args},
                )
            )
    return out


# pi's bash tool fails a non-zero exit with its output plus this last line (tools/bash.js);
# a timeout or an abort ends with another line and records no exit code.
_BASH_EXIT = re.compile(r"(?:^|\n)Command exited with code (-?\d+)\s*\Z")


def tool_result(msg: dict[str, Any]) -> ToolResult:
    """A ``toolResult`` message; a bash result carries its exit code (0 when it succeeded)."""
    content = flatten_text(msg.get("content"))
    is_error = bool(msg.get("isError"))
    code = None
    if msg.get("toolName") == "bash":
        m = _BASH_EXIT.search(content)
        code = int(m.group(1)) if m else (None if is_error else 0)
    return ToolResult(call_id=str(msg.get("toolCallId") or ""), content=content,
                      is_error=is_error, exit_code=code)


def bash_execution_text(msg: dict[str, Any]) -> str:
    """A ``bashExecution`` message (the user's own ``!command``): command, output, exit code."""
    text = f"$ {msg.get('command', '')}\n{msg.get('output', '')}"
    code = msg.get("exitCode")
    return text + (f"\n(exit code {code})" if isinstance(code, int) else "")


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return usage_fields(raw, ("input", "cacheWrite", "cacheRead", "output"))


def live_entries(records: list[Record]) -> list[Record]:
    """The path from the newest entry back to the root, in file order (all of it if linear)."""
    by_id = {r.obj["id"]: i for i, r in enumerate(records) if isinstance(r.obj.get("id"), str)}
    has_tree = any("parentId" in r.obj for r in records)
    if not has_tree:
        return records
    leaf = next(
        (i for i in range(len(records) - 1, -1, -1)
         if "parentId" in records[i].obj and records[i].obj.get("type") != "session"),
        None,
    )
    keep: set[int] = set()
    cur = leaf
    while cur is not None and cur not in keep:
        keep.add(cur)
        parent = records[cur].obj.get("parentId")
        cur = by_id.get(parent) if isinstance(parent, str) else None
    # The header and other id-less entries (labels, settings) stay: they are not branches.
    return [r for i, r in enumerate(records) if i in keep or "parentId" not in r.obj]


@dataclass
class _Reader:
    """What the entries said so far: the builder and the session's own facts."""

    b: StepBuilder = field(default_factory=StepBuilder)
    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None


def _session(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.session_id = str_or(obj.get("id"), r.session_id)
    r.cwd = str_or(obj.get("cwd"), r.cwd)
    r.model = str_or(obj.get("modelId"), r.model)
    r.b.other(raw, ts)


def _model_change(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.model = str_or(obj.get("modelId"), r.model)
    r.b.other(raw, ts)


def _compaction(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    summary = obj.get("summary")
    tokens = obj.get("tokensBefore")
    r.b.compaction(
        raw, ts, trigger="compaction",
        pre_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        summary=TextBlock(role="user", text=str(summary), meta=True) if summary else None,
    )


def _branch_summary(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    if not obj.get("summary"):
        r.b.other(raw, ts)
        return
    r.b.prompt(raw, ts, [TextBlock(role="user", text=str(obj["summary"]), meta=True)])


def _message(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    msg = obj.get("message")
    if not isinstance(msg, dict):
        r.b.other(raw, ts)
        return
    role = msg.get("role")
    handler = _ROLES.get(role, _other_role) if isinstance(role, str) else _other_role
    handler(r, msg, raw, ts)


def _assistant(r: _Reader, msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.output(
        raw, ts, _assistant_blocks(msg.get("content")), new_call=True,
        usage=_usage(msg.get("usage")), model=str_or(msg.get("model"), r.model),
    )


def _tool_result(r: _Reader, msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.result(raw, ts, tool_result(msg))


def _bash(r: _Reader, msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.prompt(raw, ts, [TextBlock(role="user", text=bash_execution_text(msg), meta=True)])


def _user(r: _Reader, msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.prompt(raw, ts, [TextBlock(role="user", text=flatten_text(msg.get("content")))])


def _other_role(r: _Reader, msg: dict[str, Any], raw: RawLine, ts: Any) -> None:
    text = flatten_text(msg.get("content"))
    r.b.prompt(raw, ts, [TextBlock(role="user", text=text, meta=True)] if text else [])


def _other(r: _Reader, obj: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.other(raw, ts)


_Handler = Callable[[_Reader, dict[str, Any], RawLine, Any], None]
#: One handler per entry ``type``; a ``message`` entry goes on to one handler per ``role``.
_TYPES: dict[str, _Handler] = {
    "session": _session,
    "model_change": _model_change,
    "compaction": _compaction,
    "branch_summary": _branch_summary,
    "message": _message,
}
_ROLES: dict[str, _Handler] = {
    "assistant": _assistant,
    "toolResult": _tool_result,
    "bashExecution": _bash,
    "user": _user,
}


def load(path: Path) -> Session:
    source = SourceFile(path)
    stats = read_records(path)
    require_records(path, stats, "pi")
    r = _Reader()
    for rec in live_entries(stats.records):
        obj, raw = rec.obj, rec.raw(source)
        r.b.note_id(raw, f"id:{obj['id']}" if isinstance(obj.get("id"), str) else None)
        kind = obj.get("type")
        handler = _TYPES.get(kind, _other) if isinstance(kind, str) else _other
        handler(r, obj, raw, obj.get("timestamp"))
    steps = r.b.finish()
    started, ended = timestamps(rec.obj.get("timestamp") for rec in stats.records)
    last_model = next((s.model for s in reversed(steps) if s.model), r.model)
    return Session(
        format="pi", session_id=r.session_id, path=str(path), cwd=r.cwd, steps=steps,
        compactions=r.b.compactions, malformed_lines=stats.malformed, started_at=started,
        ended_at=ended, model=last_model,
    )
