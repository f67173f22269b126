"""The parent's live view, read the cheap way: stdlib only, a bounded tail, complete lines.

SubagentStart runs before the subagent's first model call, so this path may not import the
transcript adapters (pydantic: about a second on a 2.7 MB session). It reads at most
``MAX_TAIL_BYTES`` from the end of a regular file, keeps only whole JSON lines, and pairs each
tool call with its result. Every call keeps the exact byte span of the lines it came from, so a
block built from it is labelled with the SHA-256 of those very bytes. Anything odd (not a
regular file, too large, binary, a line that is not JSON) gives fewer calls, never an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contextfork.inputfile import read_quietly

MAX_TAIL_BYTES = 2 * 1024 * 1024
MAX_FILE_BYTES = 256 * 1024 * 1024  # larger than this: not a transcript we slice (nothing)
MAX_LINE_BYTES = 512 * 1024  # one longer line is skipped (a huge paste or hostile input)
AGENT_TOOLS = ("Agent", "Task", "spawn_agent")


class Call:
    """One tool call of the parent and the result it got (plain class: no dataclasses import)."""

    __slots__ = (
        "call_id",
        "input",
        "is_error",
        "message_id",
        "name",
        "order",
        "result",
        "result_span",
        "result_uuid",
        "span",
        "uuid",
    )  # fmt: skip

    def __init__(self, name: str, inp: dict[str, Any], call_id: str, uuid: str | None,
                 span: tuple[int, int], order: int) -> None:  # fmt: skip
        self.name = name
        self.input = inp
        self.call_id = call_id
        self.uuid = uuid
        self.span = span  # byte offsets [start, end) of the call's line in the file
        self.result = ""
        self.is_error = False
        self.result_span: tuple[int, int] | None = None
        self.result_uuid: str | None = None
        self.order = order
        self.message_id: str | None = None  # one API response: Claude Code splits it over lines


class LiveView:
    """What the slicer needs of the parent: its calls, its user prompts, where the bytes are."""

    def __init__(self, path: Path | None, data: bytes, base: int, harness: str) -> None:
        self.path = path
        self.data = data  # the tail that was read
        self.base = base  # file offset of data[0]
        self.harness = harness
        self.calls: list[Call] = []
        self.prompts: list[str] = []
        self.line_uuids: list[tuple[int, str]] = []  # (file offset, uuid) in file order
        self.skipped = 0
        self.context_tokens = 0  # the newest recorded input of a model call (0: none recorded)

    def bytes_of(self, span: tuple[int, int]) -> bytes:
        return self.data[span[0] - self.base : span[1] - self.base]


def empty(harness: str = "claude-code") -> LiveView:
    return LiveView(None, b"", 0, harness)


def read_tail(path: Path) -> tuple[bytes, int] | None:
    """The last MAX_TAIL_BYTES of a regular file, cut to whole lines; None when unusable."""
    got = read_quietly(path, MAX_FILE_BYTES, tail=MAX_TAIL_BYTES)
    if got is None:
        return None
    data, start = got
    if start > 0:  # the first line is cut: drop it
        cut = data.find(b"\n")
        if cut < 0:
            return None
        data, start = data[cut + 1 :], start + cut + 1
    end = data.rfind(b"\n")
    data = data[: end + 1] if end >= 0 else b""
    return data, start


def _text(content: Any, limit: int = 20_000) -> str:
    if isinstance(content, str):
        return content[:limit]
    out: list[str] = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                out.append(b["text"])
            elif isinstance(b, str):
                out.append(b)
    return "\n".join(out)[:limit]


def _lines(data: bytes, base: int) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        raw = data[pos:end]
        if len(raw) <= MAX_LINE_BYTES and raw.strip():
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                obj = None
            if isinstance(obj, dict):
                out.append((base + pos, base + end, obj))
        pos = end
    return out


def _claude(view: LiveView, lines: list[tuple[int, int, dict[str, Any]]]) -> None:
    by_id: dict[str, Call] = {}
    for start, end, obj in lines:
        if obj.get("isSidechain"):
            continue
        uid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        if uid:
            view.line_uuids.append((start, uid))
        msg = obj.get("message")
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if obj.get("type") == "assistant":
            view.context_tokens = _recorded(msg.get("usage"), CLAUDE_INPUT) or view.context_tokens
        if obj.get("type") == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    call = Call(str(b.get("name", "")), b["input"], str(b.get("id", "")), uid,
                                (start, end), len(view.calls))  # fmt: skip
                    mid = msg.get("id")
                    call.message_id = mid if isinstance(mid, str) else None
                    view.calls.append(call)
                    by_id[call.call_id] = call
        elif obj.get("type") == "user":
            if isinstance(content, str):
                view.prompts.append(content[:4000])
                continue
            if not isinstance(content, list):
                continue
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    hit = by_id.get(str(b.get("tool_use_id")))
                    if hit is not None:
                        hit.result = _text(b.get("content"))
                        hit.is_error = bool(b.get("is_error"))
                        hit.result_span, hit.result_uuid = (start, end), uid
                elif b.get("type") == "text" and not str(b.get("text", "")).startswith("<"):
                    view.prompts.append(str(b.get("text"))[:4000])


def _codex(view: LiveView, lines: list[tuple[int, int, dict[str, Any]]]) -> None:
    by_id: dict[str, Call] = {}
    for start, end, obj in lines:
        p = obj.get("payload")
        if obj.get("type") == "event_msg" and isinstance(p, dict) and p.get("type") == "token_count":
            info = p.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            view.context_tokens = _recorded(last, ("input_tokens",)) or view.context_tokens
        if obj.get("type") != "response_item" or not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind in ("function_call", "custom_tool_call"):
            raw = p.get("arguments", p.get("input"))
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                args = {"input": raw}
            if not isinstance(args, dict):
                args = {"input": raw}
            call = Call(str(p.get("name", "")), args, str(p.get("call_id", "")), None,
                        (start, end), len(view.calls))  # fmt: skip
            view.calls.append(call)
            by_id[call.call_id] = call
        elif kind in ("function_call_output", "custom_tool_call_output"):
            hit = by_id.get(str(p.get("call_id")))
            if hit is not None:
                out = p.get("output")
                hit.result = _text(out) if not isinstance(out, dict) else _text(out.get("content"))
                code = _exit_code(hit.result)
                hit.is_error = code not in (None, 0)
                hit.result_span = (start, end)
        elif kind == "message" and p.get("role") == "user":
            text = _text(p.get("content"))
            if text and not text.startswith("<"):
                view.prompts.append(text[:4000])


_PI_NAMES = {"read": "Read", "bash": "Bash", "edit": "Edit", "write": "Write", "grep": "Grep",
             "find": "Glob", "ls": "Glob"}  # pi's tools, named as Claude Code's (the slicer's words)


def _pi(view: LiveView, lines: list[tuple[int, int, dict[str, Any]]]) -> None:
    """pi session entries: assistant ``toolCall`` blocks and ``toolResult`` messages."""
    by_id: dict[str, Call] = {}
    for start, end, obj in lines:
        msg = obj.get("message")
        if obj.get("type") != "message" or not isinstance(msg, dict):
            continue
        uid = obj.get("id") if isinstance(obj.get("id"), str) else None
        role = msg.get("role")
        content = msg.get("content")
        if role == "assistant":
            view.context_tokens = _recorded(msg.get("usage"), PI_INPUT) or view.context_tokens
        if role == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("arguments"), dict):
                    name = str(b.get("name", ""))
                    call = Call(_PI_NAMES.get(name, name), b["arguments"], str(b.get("id", "")), uid,
                                (start, end), len(view.calls))  # fmt: skip
                    view.calls.append(call)
                    by_id[call.call_id] = call
        elif role == "toolResult":
            hit = by_id.get(str(msg.get("toolCallId")))
            if hit is not None:
                hit.result = _text(content)
                hit.is_error = bool(msg.get("isError"))
                hit.result_span = (start, end)
        elif role == "user":
            text = _text(content)
            if text:
                view.prompts.append(text[:4000])


CLAUDE_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
PI_INPUT = ("input", "cacheRead", "cacheWrite")


def _recorded(usage: Any, keys: tuple[str, ...]) -> int:
    """The input a model call was sent, as its harness recorded it (0: not recorded)."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for k in keys:
        v = usage.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            total += v
    return total


def _exit_code(text: str) -> int | None:
    for marker in ("Process exited with code ", "Exit code: ", "exit code "):
        at = text.find(marker)
        if at >= 0:
            digits = text[at + len(marker) : at + len(marker) + 4].split()[0:1]
            if digits and digits[0].rstrip(".,").lstrip("-").isdigit():
                return int(digits[0].rstrip(".,"))
    return None


def read_live(path: Path | None) -> LiveView:
    """The parent's calls and prompts from the tail of its transcript (Claude Code or Codex)."""
    if path is None:
        return empty()
    got = read_tail(path)
    if got is None:
        return empty()
    data, base = got
    lines = _lines(data, base)
    head = [o for _, _, o in lines[:20]]
    if any(o.get("type") in ("session_meta", "response_item", "turn_context") for o in head):
        harness, reader = "codex", _codex
    elif any(o.get("type") == "message" and isinstance(o.get("message"), dict)
             and "role" in o["message"] and "uuid" not in o for o in head):  # fmt: skip
        harness, reader = "pi", _pi
    else:
        harness, reader = "claude-code", _claude
    view = LiveView(path, data, base, harness)
    reader(view, lines)
    for call in view.calls:
        if not call.is_error and view.harness == "claude-code" and call.name == "Bash":
            code = _exit_code(call.result)
            call.is_error = code not in (None, 0)
    return view


def task_call(view: LiveView, agent_type: str | None, agent_id: str | None = None) -> tuple[Call | None, str]:
    """The newest Agent/Task/spawn_agent call this subagent most likely came from.

    Claude Code 2.1.328 fires SubagentStart for parallel calls in no fixed order and without the
    call id, so among the newest response's agent calls the one whose type matches is taken; two
    of the same type are ambiguous (→ None, "ambiguous"). A call that already has its result
    (``Async agent launched``) belongs to a subagent that started earlier ("stale")."""
    agents = [c for c in view.calls if c.name in AGENT_TOOLS]
    if not agents:
        return None, "none"
    if agent_id:  # the launch result names the agent (Claude Code `agentId: …`, Codex `agent_id`)
        named = [c for c in agents if agent_id in c.result]
        if named:
            return named[-1], "exact"
    last = agents[-1]
    if view.harness != "claude-code":
        batch = [last]
    elif last.message_id is not None:  # one response, split over several lines
        batch = [c for c in agents if c.message_id == last.message_id]
    else:
        batch = [c for c in agents if c.span == last.span]
    if view.harness == "claude-code" and agent_type:
        batch = [c for c in batch if str(c.input.get("subagent_type") or "general-purpose") == agent_type]
    if not batch:
        return None, "none"
    open_calls = [c for c in batch if c.result_span is None]
    if not open_calls:
        return None, "stale"
    if len(open_calls) != 1:
        return None, "ambiguous"
    return open_calls[0], "matched"


WAIT_SECONDS = 0.15
WAIT_STEP = 0.025


def read_for_task(path: Path | None, agent_type: str | None, wait: float = 0.0,
                  agent_id: str | None = None) -> tuple[LiveView, Call | None, str]:  # fmt: skip
    """The live view and the subagent's call; when the call is not written yet (SubagentStart
    can run before Claude Code appends the Agent call, seen with 2.1.328), re-read the tail for
    at most ``wait`` seconds."""
    import time  # lazy: hot path

    deadline = time.monotonic() + wait
    while True:
        size = _size(path) if path is not None else -1  # before the read: growth after it counts
        view = read_live(path)
        call, how = task_call(view, agent_type, agent_id)
        conversation = bool(view.line_uuids or view.calls or view.prompts)  # else: not a transcript
        if how not in ("none", "stale") or not conversation or view.path is None:
            return view, call, how
        while True:  # re-read only when the file grew (a stat is cheap, a 2 MiB parse is not)
            if time.monotonic() >= deadline:
                return view, call, how
            time.sleep(WAIT_STEP)
            if _size(view.path) != size:
                break


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def task_text(call: Call | None) -> str:
    if call is None:
        return ""
    for key in ("prompt", "message", "description"):
        v = call.input.get(key)
        if isinstance(v, str) and v.strip():
            return v[:8000]
    items = call.input.get("items")
    return _text(items, 8000) if isinstance(items, list) else ""
