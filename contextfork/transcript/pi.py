"""pi coding agent session JSONL → ``Session``.

Newer pi sessions are a tree (``id``/``parentId``; ``/tree`` and ``/fork`` leave branches), so
the live conversation is the path from the newest entry to the root. Older sessions have no ids
and are simply linear. Every assistant message is one model call, so one step.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonl import Record, read_records, require_records
from contextfork.transcript._steps import StepBuilder, timestamps, usage_fields
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


def load(path: Path) -> Session:
    stats = read_records(path)
    require_records(path, stats, "pi")
    b = StepBuilder()
    session_id = cwd = model = None
    for rec in live_entries(stats.records):
        obj, raw, ts = rec.obj, RawLine(offset=rec.offset, text=rec.text), rec.obj.get("timestamp")
        kind = obj.get("type")
        b.note_id(raw, f"id:{obj['id']}" if isinstance(obj.get("id"), str) else None)
        if kind == "session":
            session_id = obj.get("id") if isinstance(obj.get("id"), str) else session_id
            cwd = obj.get("cwd") if isinstance(obj.get("cwd"), str) else cwd
            model = obj.get("modelId") if isinstance(obj.get("modelId"), str) else model
            b.other(raw, ts)
            continue
        if kind == "model_change":
            model = obj.get("modelId") if isinstance(obj.get("modelId"), str) else model
            b.other(raw, ts)
            continue
        if kind == "compaction":
            summary = obj.get("summary")
            tokens = obj.get("tokensBefore")
            b.compaction(
                raw, ts, trigger="compaction",
                pre_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
                summary=TextBlock(role="user", text=str(summary), meta=True) if summary else None,
            )
            continue
        if kind == "branch_summary" and obj.get("summary"):
            b.prompt(raw, ts, [TextBlock(role="user", text=str(obj["summary"]), meta=True)])
            continue
        msg = obj.get("message")
        if kind != "message" or not isinstance(msg, dict):
            b.other(raw, ts)
            continue
        role = msg.get("role")
        if role == "assistant":
            m = msg.get("model") if isinstance(msg.get("model"), str) else model
            b.output(
                raw, ts, _assistant_blocks(msg.get("content")), new_call=True,
                usage=_usage(msg.get("usage")), model=m,
            )
        elif role == "toolResult":
            b.result(raw, ts, tool_result(msg))
        elif role == "bashExecution":
            b.prompt(raw, ts, [TextBlock(role="user", text=bash_execution_text(msg), meta=True)])
        elif role == "user":
            b.prompt(raw, ts, [TextBlock(role="user", text=flatten_text(msg.get("content")))])
        else:
            text = flatten_text(msg.get("content"))
            b.prompt(raw, ts, [TextBlock(role="user", text=text, meta=True)] if text else [])
    steps = b.finish()
    started, ended = timestamps(r.obj.get("timestamp") for r in stats.records)
    last_model = next((s.model for s in reversed(steps) if s.model), model)
    return Session(
        format="pi", session_id=session_id, path=str(path), cwd=cwd, steps=steps,
        compactions=b.compactions, malformed_lines=stats.malformed, started_at=started,
        ended_at=ended, model=last_model,
    )
