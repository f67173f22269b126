"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) → ``Session``.

Lines are ``{timestamp, type, payload}``. Codex has no message ids: a model call is the run of
``response_item`` outputs (reasoning, messages, tool calls) up to its tool outputs or its
``token_count`` event, whose ``last_token_usage`` is that call's recorded usage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonl import read_records, require_records
from contextfork.transcript._steps import StepBuilder, int_field, timestamps
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


def load(path: Path) -> Session:
    stats = read_records(path)
    require_records(path, stats, "Codex")
    b = StepBuilder()
    session_id = cwd = system = model = branch = None
    exit_codes: dict[str, int] = {}
    last_total: Any = None
    for rec in stats.records:
        obj, raw, ts = rec.obj, RawLine(offset=rec.offset, text=rec.text), rec.obj.get("timestamp")
        kind = obj.get("type")
        payload = obj.get("payload")
        p: dict[str, Any] = payload if isinstance(payload, dict) else {}
        ptype = p.get("type")
        if kind == "session_meta":
            session_id = p.get("id") if isinstance(p.get("id"), str) else session_id
            cwd = p.get("cwd") if isinstance(p.get("cwd"), str) else cwd
            system = p.get("instructions") if isinstance(p.get("instructions"), str) else system
            git = p.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str):
                branch = git["branch"]
            b.other(raw, ts)
        elif kind == "turn_context":
            model = p.get("model") if isinstance(p.get("model"), str) else model
            b.other(raw, ts)
        elif kind == "compacted":
            summary = p.get("message")
            block = TextBlock(role="user", text=str(summary), meta=True) if summary else None
            b.compaction(raw, ts, trigger="compacted", summary=block)
        elif kind == "response_item" and ptype == "message":
            role = p.get("role")
            text = _texts(p.get("content"))
            if role == "assistant":
                b.output(raw, ts, [TextBlock(role="assistant", text=text)], model=model)
            elif role in ("developer", "system"):
                b.prompt(raw, ts, [TextBlock(role="system", text=text, meta=True)])
            else:
                meta = text.lstrip().startswith(_META_PREFIXES)
                b.prompt(raw, ts, [TextBlock(role="user", text=text, meta=meta)])
        elif kind == "response_item" and ptype == "reasoning":
            parts = _texts(p.get("summary")) or _texts(p.get("content"))
            blocks: list[Block] = [ThinkingBlock(text=parts or "[encrypted reasoning]")]
            b.output(raw, ts, blocks, model=model)
        elif kind == "response_item" and ptype in (
            "function_call", "custom_tool_call", "local_shell_call", "web_search_call"
        ):
            b.output(raw, ts, [_call(p)], model=model)
        elif kind == "response_item" and ptype in ("function_call_output", "custom_tool_call_output"):
            call_id = str(p.get("call_id") or "")
            text, ok = _output_text(p.get("output"))
            code = exit_codes.get(call_id, _exit_code(text))
            is_error = (ok is False) or (code is not None and code != 0)
            b.result(raw, ts, ToolResult(call_id=call_id, content=text, is_error=is_error, exit_code=code))
        elif kind == "event_msg" and ptype == "token_count":
            info = p.get("info")
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            usage = _usage(info)
            # Codex repeats token_count events with an unchanged total: one call, one usage.
            if usage is not None and total != last_total:
                b.usage(usage)
                last_total = total
            b.other(raw, ts)
        elif kind == "event_msg" and ptype == "exec_command_end":
            code = p.get("exit_code")
            if isinstance(code, int) and isinstance(p.get("call_id"), str):
                exit_codes[p["call_id"]] = code
            b.other(raw, ts)
        else:
            b.other(raw, ts)
    steps = b.finish()
    started, ended = timestamps(r.obj.get("timestamp") for r in stats.records)
    return Session(
        format="codex", session_id=session_id, path=str(path), cwd=cwd, git_branch=branch,
        system_prompt=system, steps=steps, compactions=b.compactions,
        malformed_lines=stats.malformed, started_at=started, ended_at=ended, model=model,
    )
