"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) → ``Session``.

Lines are ``{timestamp, type, payload}``. Codex has no message ids: a model call is the run of
``response_item`` outputs (reasoning, messages, tool calls) up to its tool outputs or its
``token_count`` event, whose ``last_token_usage`` is that call's recorded usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonl import ReadStats, each_record, require_records
from contextfork.transcript._steps import StepBuilder, int_field, str_or, timestamps
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

_META_PREFIXES = (
    "<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
    "<INSTRUCTIONS>", "<turn_aborted>", "<user_shell_command>",
)
_EXIT_RES = (
    re.compile(r"^Exit code: (-?\d+)", re.MULTILINE),
    re.compile(r'"exit_code"\s*:\s*(-?\d+)'),
)


def _texts(content: Any) -> str:
    return flatten_text(content, kinds=None, markers={})


def _output_text(output: Any) -> tuple[str, bool | None]:
    """Tool output as text plus Codex's own success flag when it records one."""
    if isinstance(output, dict):
        ok = output.get("success")
        return _texts(output.get("content")) or json.dumps(output), ok if isinstance(ok, bool) else None
    if isinstance(output, list):
        return _texts(output), None
    text = str(output or "")
    # Older rollouts: a JSON string {"output": ..., "metadata": {"exit_code": ...}}.
    if text.startswith("{"):
        try:
            inner = json.loads(text)
        except ValueError:
            return text, None
        if isinstance(inner, dict) and "output" in inner:
            meta = inner.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return str(inner["output"]), (code == 0) if isinstance(code, int) else None
    return text, None


def _output_of(data: bytes) -> str:
    """An output's text read back from its line's bytes (``ToolResult.in_file``)."""
    payload = json.loads(data).get("payload")
    return _output_text(payload.get("output") if isinstance(payload, dict) else None)[0]


def _exit_code(text: str) -> int | None:
    for rx in _EXIT_RES:
        m = rx.search(text[:400])
        if m:
            return int(m.group(1))
    return None


def _call(payload: dict[str, Any]) -> ToolCall:
    kind = payload.get("type")
    call_id = str(payload.get("call_id") or payload.get("id") or "")
    if kind == "function_call":
        args = payload.get("arguments")
        parsed: Any = args
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = {"arguments": args}
        inp = parsed if isinstance(parsed, dict) else {"arguments": parsed}
        return ToolCall(id=call_id, name=str(payload.get("name") or "function"), input=inp)
    if kind == "custom_tool_call":
        return ToolCall(
            id=call_id, name=str(payload.get("name") or "custom"),
            input={"input": payload.get("input")},
        )
    if kind == "local_shell_call":
        action = payload.get("action")
        return ToolCall(
            id=call_id, name="local_shell", input=action if isinstance(action, dict) else {}
        )
    return ToolCall(id=call_id, name=str(kind), input={k: v for k, v in payload.items() if k != "type"})


def _usage(info: Any) -> Usage | None:
    if not isinstance(info, dict):
        return None
    last = info.get("last_token_usage")
    if not isinstance(last, dict):
        return None
    total_in = int_field(last, "input_tokens")
    cached = int_field(last, "cached_input_tokens")
    return Usage(
        input_tokens=max(total_in - cached, 0),
        cache_read_input_tokens=cached,
        output_tokens=int_field(last, "output_tokens"),
    )


@dataclass
class _Rollout:
    """What the lines said so far: the builder and the session's own facts."""

    b: StepBuilder = field(default_factory=StepBuilder)
    session_id: str | None = None
    cwd: str | None = None
    system: str | None = None
    model: str | None = None
    branch: str | None = None
    exit_codes: dict[str, int] = field(default_factory=dict)
    last_total: Any = None
    in_file: bool = False


def _session_meta(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.session_id = str_or(p.get("id"), r.session_id)
    r.cwd = str_or(p.get("cwd"), r.cwd)
    r.system = str_or(p.get("instructions"), r.system)
    git = p.get("git")
    if isinstance(git, dict) and isinstance(git.get("branch"), str):
        r.branch = git["branch"]
    r.b.other(raw, ts)


def _turn_context(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.model = str_or(p.get("model"), r.model)
    r.b.other(raw, ts)


def _compacted(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    summary = p.get("message")
    block = TextBlock(role="user", text=str(summary), meta=True) if summary else None
    r.b.compaction(raw, ts, trigger="compacted", summary=block)


def _message(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    role = p.get("role")
    text = _texts(p.get("content"))
    if role == "assistant":
        r.b.output(raw, ts, [TextBlock(role="assistant", text=text)], model=r.model)
    elif role in ("developer", "system"):
        r.b.prompt(raw, ts, [TextBlock(role="system", text=text, meta=True)])
    else:
        meta = text.lstrip().startswith(_META_PREFIXES)
        r.b.prompt(raw, ts, [TextBlock(role="user", text=text, meta=meta)])


def _reasoning(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    parts = _texts(p.get("summary")) or _texts(p.get("content"))
    blocks: list[Block] = [ThinkingBlock(text=parts or "[encrypted reasoning]")]
    r.b.output(raw, ts, blocks, model=r.model)


def _tool_call(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.output(raw, ts, [_call(p)], model=r.model)


def _tool_output(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    call_id = str(p.get("call_id") or "")
    text, ok = _output_text(p.get("output"))
    code = r.exit_codes.get(call_id, _exit_code(text))
    is_error = (ok is False) or (code is not None and code != 0)
    r.b.result(raw, ts, ToolResult.of(text, call_id=call_id, is_error=is_error, exit_code=code,
                                      span=(raw, _output_of) if r.in_file else None))  # fmt: skip


def _token_count(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    info = p.get("info")
    total = info.get("total_token_usage") if isinstance(info, dict) else None
    usage = _usage(info)
    # Codex repeats token_count events with an unchanged total: one call, one usage.
    if usage is not None and total != r.last_total:
        r.b.usage(usage)
        r.last_total = total
    r.b.other(raw, ts)


def _exec_end(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    code = p.get("exit_code")
    if isinstance(code, int) and isinstance(p.get("call_id"), str):
        r.exit_codes[p["call_id"]] = code
    r.b.other(raw, ts)


def _other(r: _Rollout, p: dict[str, Any], raw: RawLine, ts: Any) -> None:
    r.b.other(raw, ts)


_Handler = Callable[[_Rollout, dict[str, Any], RawLine, Any], None]
#: One handler per record: ``(type, payload.type)``, or ``(type, None)`` for any payload.
_HANDLERS: dict[tuple[str, str | None], _Handler] = {
    ("session_meta", None): _session_meta,
    ("turn_context", None): _turn_context,
    ("compacted", None): _compacted,
    ("response_item", "message"): _message,
    ("response_item", "reasoning"): _reasoning,
    **{("response_item", t): _tool_call for t in (
        "function_call", "custom_tool_call", "local_shell_call", "web_search_call")},
    **{("response_item", t): _tool_output for t in (
        "function_call_output", "custom_tool_call_output")},
    ("event_msg", "token_count"): _token_count,
    ("event_msg", "exec_command_end"): _exec_end,
}


def _handler(kind: Any, ptype: Any) -> _Handler:
    if not isinstance(kind, str):
        return _other
    typed = _HANDLERS.get((kind, ptype)) if isinstance(ptype, str) else None
    return typed or _HANDLERS.get((kind, None), _other)


def load(path: Path, *, in_file: bool = False) -> Session:
    """``in_file``: long outputs stay in the rollout, read back when used (``ToolResult.in_file``)."""
    source = SourceFile(path)
    stats = ReadStats()
    r = _Rollout(in_file=in_file)
    stamps: list[Any] = []
    # Each line is handled as it is read: its parsed object goes once its steps hold what they
    # keep of it (a 55 MB rollout held every object at once: 2.6 bytes per transcript byte).
    for rec in each_record(path, stats):
        payload = rec.obj.get("payload")
        p: dict[str, Any] = payload if isinstance(payload, dict) else {}
        raw = rec.raw(source)
        ts = rec.obj.get("timestamp")
        stamps.append(ts)
        _handler(rec.obj.get("type"), p.get("type"))(r, p, raw, ts)
    require_records(path, stats, "Codex")
    steps = r.b.finish()
    started, ended = timestamps(stamps)
    return Session(
        format="codex", session_id=r.session_id, path=str(path), cwd=r.cwd, git_branch=r.branch,
        system_prompt=r.system, steps=steps, compactions=r.b.compactions,
        malformed_lines=stats.malformed, started_at=started, ended_at=ended, model=r.model,
    )
