"""Recorded Claude Code sessions replayed as the Messages API requests the client sent.

A Claude Code transcript writes one line per content block of a response (sharing
``message.id``) and one user line per tool result; the API saw one assistant message per
response and one user message holding all its results. ``requests_of`` rebuilds that: the
``messages`` array of every model call, in order (a compaction starts a new history at its
summary). ``body_of`` wraps one in a request as Claude Code 2.1 sends it: compact JSON, a
system prompt and tools with breakpoints, and a ``cache_control`` breakpoint on the last part
of the last message (moved every call, as the client does).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def requests_of(path: Path) -> list[list[dict[str, Any]]]:
    msgs: list[dict[str, Any]] = []
    last_id: str | None = None
    last_at = -1
    calls: list[list[dict[str, Any]]] = []
    lines = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    # a subagent's own file holds only sidechain lines: then they are the conversation
    main = any(not o.get("isSidechain") for o in lines if o.get("type") in ("user", "assistant"))
    for obj in lines:
        if (main and obj.get("isSidechain")) or obj.get("type") not in ("user", "assistant"):
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        if obj["type"] == "assistant":
            mid = message.get("id")
            parts = _parts(message.get("content"))
            if mid is not None and mid == last_id and last_at >= 0:
                msgs[last_at]["content"].extend(parts)
                # the results written between two lines of one response: one user message
                tail = msgs[last_at + 1 :]
                if tail:
                    merged = {"role": "user", "content": [p for m in tail for p in m["content"]]}
                    msgs[last_at + 1 :] = [merged]
                continue
            if msgs and msgs[-1]["role"] == "user":
                calls.append(copy.deepcopy(msgs))
            msgs.append({"role": "assistant", "content": parts})
            last_id, last_at = mid, len(msgs) - 1
            continue
        if obj.get("isCompactSummary"):
            msgs, last_id, last_at = [], None, -1
        parts = _parts(message.get("content"))
        if msgs and msgs[-1]["role"] == "user":
            msgs[-1]["content"].extend(parts)
        else:
            msgs.append({"role": "user", "content": parts})
    if msgs and msgs[-1]["role"] == "user":
        calls.append(copy.deepcopy(msgs))
    return calls


SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=cli;"},
    {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Be helpful." * 50, "cache_control": {"type": "ephemeral"}},
]
TOOLS = [{"name": n, "description": f"The {n} tool", "input_schema": {"type": "object"}}
         for n in ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "Agent")]


def body_of(messages: list[dict[str, Any]], session: str = "0b5f7a8e-1111-4222-8333-944455556666",
            tools: list[dict[str, Any]] | None = None) -> bytes:
    msgs = copy.deepcopy(messages)
    last = msgs[-1]["content"]
    if isinstance(last, list) and last and isinstance(last[-1], dict):
        last[-1]["cache_control"] = {"type": "ephemeral"}
    body = {
        "model": "claude-sonnet-4-5-20250929",
        "messages": msgs,
        "system": SYSTEM,
        "tools": TOOLS if tools is None else tools,
        "metadata": {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "",
                                            "session_id": session})},
        "max_tokens": 32000,
        "stream": True,
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
