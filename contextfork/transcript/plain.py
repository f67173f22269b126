"""A plain message array → ``Session``: OpenAI chat messages or Anthropic messages.

Accepted shapes: a top-level JSON array, or an object with ``messages`` (and an optional
Anthropic ``system``). The dialect is recognised per message, so a mixed export still reads.
"""

from __future__ import annotations

import json
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


def load(path: Path) -> Session:
    whole, elements = document(path, "messages")
    b = StepBuilder()
    dialect: Literal["openai-chat", "anthropic-messages"] = "openai-chat"
    system: str | None = None
    if isinstance(whole, dict) and whole.get("system") is not None:
        system = _text(whole["system"])
        dialect = "anthropic-messages"
    malformed = 0
    usable = 0
    for n, el in enumerate(elements):
        msg = el.value
        raw = RawLine(offset=el.offset, text=el.text)
        b.note_id(raw, f"msg:{n}")  # the file is rewritten whole: its message index is stable
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            malformed += 1
            b.other(raw, None)
            continue
        usable += 1
        role, content = msg["role"], msg.get("content")
        if isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") in ("tool_use", "tool_result", "thinking")
            for c in content
        ):
            dialect = "anthropic-messages"
        if role in ("system", "developer"):
            if system is None and not b.steps:
                system = _text(content)
                b.prompt(raw, None, [])
            else:
                b.prompt(raw, None, [TextBlock(role="system", text=_text(content), meta=True)])
        elif role == "assistant":
            if isinstance(content, list):
                blocks = _anthropic_assistant(content)
            else:
                blocks = [TextBlock(role="assistant", text=_text(content))] if content else []
            blocks += _openai_calls(msg.get("tool_calls"))
            b.output(raw, None, blocks, new_call=True, usage=_usage(msg))
        elif role in ("tool", "function"):
            b.result(
                raw, None,
                ToolResult(call_id=str(msg.get("tool_call_id") or msg.get("name") or ""),
                           content=_text(content)),
            )
        elif isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") == "tool_result" for c in content
        ):
            results = [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"]
            for i, c in enumerate(results):
                b.result(
                    raw if i == 0 else None, None,
                    ToolResult(call_id=str(c.get("tool_use_id", "")),
                               content=_text(c.get("content")), is_error=bool(c.get("is_error"))),
                )
            extra = _text([c for c in content if isinstance(c, dict) and c.get("type") == "text"])
            if extra:
                b.prompt(None, None, [TextBlock(role="user", text=extra)])
        else:
            b.prompt(raw, None, [TextBlock(role="user", text=_text(content))])
    if not usable:
        raise UsageError(f"{path}: no message with a 'role' in the array: not a transcript")
    return Session(
        format=dialect, path=str(path), system_prompt=system, steps=b.finish(),
        compactions=b.compactions, malformed_lines=malformed,
    )
