"""A plain message array → ``Session``: OpenAI chat messages or Anthropic messages.

Accepted shapes: a top-level JSON array, or an object with ``messages`` (and an optional
Anthropic ``system``). The dialect is recognised per message, so a mixed export still reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextfork.errors import UsageError
from contextfork.transcript._content import flatten_text
from contextfork.transcript._jsonspan import document
from contextfork.transcript._steps import StepBuilder, int_field, usage_fields
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


def _text(content: Any) -> str:
    return flatten_text(
        content, kinds=("text", "input_text", "output_text"),
        markers={"image": "[image]", "image_url": "[image]"}, strings=True, coerce=True,
    )


def _usage(msg: dict[str, Any]) -> Usage | None:
    u = msg.get("usage")
    if not isinstance(u, dict):
        return None
    if "prompt_tokens" in u:
        details = u.get("prompt_tokens_details")
        cached = int_field(details, "cached_tokens") if isinstance(details, dict) else 0
        return Usage(
            input_tokens=max(int_field(u, "prompt_tokens") - cached, 0),
            cache_read_input_tokens=cached,
            output_tokens=int_field(u, "completion_tokens"),
        )
    return usage_fields(u)


def _anthropic_assistant(content: list[Any]) -> list[Block]:
    out: list[Block] = []
    for c in content:
        if not isinstance(c, dict):
            continue
        if c.get("type") == "text":
            out.append(TextBlock(role="assistant", text=str(c.get("text", ""))))
        elif c.get("type") in ("thinking", "redacted_thinking"):
            out.append(ThinkingBlock(text=str(c.get("thinking") or "[redacted thinking]")))
        elif c.get("type") == "tool_use":
            inp = c.get("input")
            out.append(
                ToolCall(
                    id=str(c.get("id", "")), name=str(c.get("name", "")),
                    input=inp if isinstance(inp, dict) else {"value": inp},
                )
            )
    return out


def _openai_calls(calls: Any) -> list[Block]:
    out: list[Block] = []
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            continue
        fn_raw = c.get("function")
        fn: dict[str, Any] = fn_raw if isinstance(fn_raw, dict) else {}
        args: Any = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"arguments": args}
        out.append(
            ToolCall(
                id=str(c.get("id", "")), name=str(fn.get("name", "")),
                input=args if isinstance(args, dict) else {"arguments": args},
            )
        )
    return out


@dataclass
class _Reader:
    """What the messages said so far: the builder, the system prompt and the dialect."""

    b: StepBuilder = field(default_factory=StepBuilder)
    system: str | None = None
    dialect: Literal["openai-chat", "anthropic-messages"] = "openai-chat"


def _system(r: _Reader, msg: dict[str, Any], raw: RawLine) -> None:
    content = msg.get("content")
    if r.system is None and not r.b.steps:
        r.system = _text(content)
        r.b.prompt(raw, None, [])
    else:
        r.b.prompt(raw, None, [TextBlock(role="system", text=_text(content), meta=True)])


def _assistant(r: _Reader, msg: dict[str, Any], raw: RawLine) -> None:
    content = msg.get("content")
    if isinstance(content, list):
        blocks = _anthropic_assistant(content)
    else:
        blocks = [TextBlock(role="assistant", text=_text(content))] if content else []
    blocks += _openai_calls(msg.get("tool_calls"))
    r.b.output(raw, None, blocks, new_call=True, usage=_usage(msg))


def _tool(r: _Reader, msg: dict[str, Any], raw: RawLine) -> None:
    r.b.result(
        raw, None,
        ToolResult(call_id=str(msg.get("tool_call_id") or msg.get("name") or ""),
                   content=_text(msg.get("content"))),
    )


def _user(r: _Reader, msg: dict[str, Any], raw: RawLine) -> None:
    """A user message; an Anthropic one may carry tool results (then any text after them)."""
    content = msg.get("content")
    blocks = [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    results = [c for c in blocks if c.get("type") == "tool_result"]
    if not results:
        r.b.prompt(raw, None, [TextBlock(role="user", text=_text(content))])
        return
    for i, c in enumerate(results):
        r.b.result(
            raw if i == 0 else None, None,
            ToolResult(call_id=str(c.get("tool_use_id", "")),
                       content=_text(c.get("content")), is_error=bool(c.get("is_error"))),
        )
    extra = _text([c for c in blocks if c.get("type") == "text"])
    if extra:
        r.b.prompt(None, None, [TextBlock(role="user", text=extra)])


#: One handler per message ``role``; any other role is the user's.
_ROLES: dict[str, Callable[[_Reader, dict[str, Any], RawLine], None]] = {
    "system": _system, "developer": _system, "assistant": _assistant,
    "tool": _tool, "function": _tool,
}
_ANTHROPIC_ONLY = ("tool_use", "tool_result", "thinking")


def load(path: Path) -> Session:
    whole, elements = document(path, "messages")
    r = _Reader()
    if isinstance(whole, dict) and whole.get("system") is not None:
        r.system = _text(whole["system"])
        r.dialect = "anthropic-messages"
    malformed = 0
    for n, el in enumerate(elements):
        msg = el.value
        raw = RawLine(offset=el.offset, text=el.text)
        r.b.note_id(raw, f"msg:{n}")  # the file is rewritten whole: its message index is stable
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            malformed += 1
            r.b.other(raw, None)
            continue
        content = msg.get("content")
        if isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") in _ANTHROPIC_ONLY for c in content
        ):
            r.dialect = "anthropic-messages"
        _ROLES.get(msg["role"], _user)(r, msg, raw)
    if malformed == len(elements):
        raise UsageError(f"{path}: no message with a 'role' in the array: not a transcript")
    return Session(
        format=r.dialect, path=str(path), system_prompt=r.system, steps=r.b.finish(),
        compactions=r.b.compactions, malformed_lines=malformed,
    )
