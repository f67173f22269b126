"""The live steps of a Claude Code session from ``ccread`` lines, without the pydantic model.

The same walk and cut as ``contextfork.transcript.claude_code`` (``live_records``,
``_Builder``, ``_mark_preserved``), kept to what ``status`` reports: per step its index, lines,
recorded usage, model, and blocks reduced to their character estimates, tool calls (name and
input) and tool results (error flag, exit code, and text only when it failed or is a fork's
stub). tests/telemetry/test_status_fast.py pins the two to the same report.
"""

from __future__ import annotations

import re
from typing import Any

from contextfork.forkstub import STUB_PREFIX
from contextfork.telemetry.ccread import Line
from contextfork.transcript._content import IMAGE, flatten_text
from contextfork.transcript.model import Compaction

_LEAF = frozenset({"user", "assistant", "system"})
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
_MARKERS = {**IMAGE, "document": "[document]"}

# Blocks: ("est", category, chars estimate) for text and thinking, ("call", id, name, input),
# ("result", call_id, chars estimate, is_error, exit_code, text if failed else None, stub?).
Block = tuple[Any, ...]
Usage = tuple[int, int, int, int]  # input, cache creation, cache read, output


def estimate(text: str) -> int:
    return (len(text) + 3) // 4


def _content_text(content: Any) -> str:
    return flatten_text(content, markers=_MARKERS, strings=True)


def _message(line: Line) -> dict[str, Any]:
    msg = line.obj.get("message") if line.obj is not None else None
    return msg if isinstance(msg, dict) else {}


def _tool_results(line: Line) -> list[dict[str, Any]]:
    content = _message(line).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def live(lines: list[Line]) -> list[int]:
    """Indexes of the live conversation's lines in file order (``live_records``)."""
    by_uuid: dict[str, int] = {}
    for i, ln in enumerate(lines):
        if ln.uuid is not None:
            by_uuid[ln.uuid] = i
    leaf = next((i for i in range(len(lines) - 1, -1, -1)
                 if lines[i].kind in _LEAF and lines[i].uuid is not None), None)  # fmt: skip
    if leaf is None:
        return []
    chain: set[int] = set()
    cur: int | None = leaf
    while cur is not None and cur not in chain:
        chain.add(cur)
        cur = _parent_index(lines, cur, by_uuid, chain)
    msg_ids = {_message(lines[i]).get("id") for i in chain if lines[i].kind == "assistant"}
    msg_ids.discard(None)
    included = set(chain)
    for i, ln in enumerate(lines):
        if i not in included and ln.kind == "assistant" and _message(ln).get("id") in msg_ids:
            included.add(i)
    call_ids: set[str] = set()
    for i in included:
        if lines[i].kind == "assistant":
            content = _message(lines[i]).get("content")
            if isinstance(content, list):
                call_ids.update(str(b.get("id")) for b in content
                                if isinstance(b, dict) and b.get("type") == "tool_use")  # fmt: skip
    for i, ln in enumerate(lines):
        if i in included or ln.kind != "user":
            continue
        results = _tool_results(ln)
        if results and all(str(b.get("tool_use_id")) in call_ids for b in results):
            included.add(i)
    kept = {lines[i].uuid for i in included}
    for i, ln in enumerate(lines):
        if i not in included and ln.kind == "attachment" and ln.parent_uuid in kept:
            included.add(i)
            kept.add(ln.uuid)
    return sorted(included)


def _parent_index(lines: list[Line], cur: int, by_uuid: dict[str, int], chain: set[int]) -> int | None:
    ln = lines[cur]
    parent = ln.parent
    if isinstance(parent, str) and parent in by_uuid:
        return by_uuid[parent]
    is_boundary = ln.kind == "system" and ln.obj is not None and (
        ln.obj.get("subtype") == "compact_boundary")  # fmt: skip
    if not (is_boundary or isinstance(parent, str)):
        return None
    for i in range(cur - 1, -1, -1):
        if i not in chain and lines[i].kind in _LEAF and lines[i].uuid is not None:
            return i
    return None


class LStep:
    __slots__ = ("blocks", "index", "lines", "model", "preserved", "usage")

    def __init__(self, index: int, blocks: list[Block], lines: list[int]) -> None:
        self.index = index
        self.blocks = blocks
        self.lines = lines
        self.usage: Usage | None = None
        self.model: str | None = None
        self.preserved = False


def _int(d: dict[str, Any], key: str) -> int:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _total(u: Usage) -> int:
    return u[0] + u[1] + u[2] + u[3]


def _result(b: dict[str, Any]) -> Block:
    text = _content_text(b.get("content"))
    is_error = bool(b.get("is_error"))
    m = _EXIT_RE.match(text)
    code = int(m.group(1)) if m else None
    failed = is_error or (code is not None and code != 0)
    return ("result", str(b.get("tool_use_id") or ""), estimate(text), is_error, code,
            text if failed else None, text.startswith(STUB_PREFIX))  # fmt: skip


def _assistant_blocks(message: dict[str, Any]) -> list[Block]:
    content = message.get("content")
    if isinstance(content, str):
        return [("est", "assistant_history", estimate(content))] if content else []
    if not isinstance(content, list):
        return []
    out: list[Block] = []
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            out.append(("est", "assistant_history", estimate(b["text"])))
        elif kind == "thinking":
            out.append(("est", "assistant_history", estimate(str(b.get("thinking") or ""))))
        elif kind == "redacted_thinking":
            out.append(("est", "assistant_history", estimate("[redacted thinking]")))
        elif kind in ("tool_use", "server_tool_use"):
            inp = b.get("input")
            out.append(("call", str(b.get("id") or ""), str(b.get("name") or ""),
                        inp if isinstance(inp, dict) else {"value": inp}))  # fmt: skip
    return out


class Cut:
    """``_Builder`` + ``StepBuilder`` for the live lines, on ``LStep``."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.steps: list[LStep] = []
        self.compactions: list[Compaction] = []
        self.cur: LStep | None = None
        self.cur_key: str | None = None
        self.prompt_pending = False
        self.pending_blocks: list[Block] = []
        self.pending_lines: list[int] = []
        self.call_owner: dict[str, LStep] = {}

    def add(self, i: int) -> None:
        ln = self.lines[i]
        obj = ln.obj
        if obj is None:
            self._other(i)
        elif ln.kind == "assistant":
            self._assistant(obj, i)
        elif ln.kind == "user":
            self._user(obj, i)
        else:
            self._system(obj, i)

    def _open(self) -> LStep:
        step = LStep(len(self.steps) + 1, self.pending_blocks, self.pending_lines)
        self.pending_blocks, self.pending_lines = [], []
        self.prompt_pending = False
        self.steps.append(step)
        self.cur = step
        return step

    def _park(self, i: int, blocks: list[Block]) -> None:
        self.pending_blocks.extend(blocks)
        self.pending_lines.append(i)

    def _other(self, i: int) -> None:
        if self.cur is not None and not self.prompt_pending:
            self.cur.lines.append(i)
        else:
            self._park(i, [])

    def _prompt(self, i: int, blocks: list[Block]) -> None:
        self._park(i, blocks)
        self.prompt_pending = True

    def _user(self, obj: dict[str, Any], i: int) -> None:
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        results = ([b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                   if isinstance(content, list) else [])  # fmt: skip
        if results:
            blocks = [_result(b) for b in results]
            owner = self.call_owner.get(str(results[0].get("tool_use_id"))) or self.cur
            if owner is None or self.prompt_pending:
                self._park(i, blocks)
                return
            owner.lines.append(i)
            owner.blocks.extend(blocks)
            return
        text = _content_text(content)
        self._prompt(i, [("est", "user_history", estimate(text))] if text else [])

    def _system(self, obj: dict[str, Any], i: int) -> None:
        if obj.get("subtype") != "compact_boundary":
            self._other(i)
            return
        meta = obj.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        pre = meta.get("preTokens")
        ts = obj.get("timestamp")
        self.compactions.append(Compaction(
            before_step=len(self.steps) + 1, timestamp=ts if isinstance(ts, str) else None,
            trigger=str(meta["trigger"]) if "trigger" in meta else None,
            pre_tokens=pre if isinstance(pre, int) else None,
        ))  # fmt: skip
        self._prompt(i, [])

    def _assistant(self, obj: dict[str, Any], i: int) -> None:
        msg = obj.get("message")
        msg = msg if isinstance(msg, dict) else {}
        key = msg.get("id") or obj.get("requestId") or obj.get("uuid")
        key = str(key) if key is not None else None
        step = self.cur
        if step is None or self.prompt_pending or key != self.cur_key:
            step = self._open()
            self.cur_key = key
        step.lines.append(i)
        for block in _assistant_blocks(msg):
            step.blocks.append(block)
            if block[0] == "call":
                self.call_owner[block[1]] = step
        raw = msg.get("usage")
        if isinstance(raw, dict):
            usage = (_int(raw, "input_tokens"), _int(raw, "cache_creation_input_tokens"),
                     _int(raw, "cache_read_input_tokens"), _int(raw, "output_tokens"))  # fmt: skip
            if step.usage is None or _total(usage) > _total(step.usage):
                step.usage = usage
        if isinstance(msg.get("model"), str):
            step.model = msg["model"]

    def finish(self) -> list[LStep]:
        if self.pending_blocks or (self.pending_lines and not self.steps):
            self._open()
        elif self.pending_lines and self.cur is not None:
            self.cur.lines.extend(self.pending_lines)
        return self.steps


def mark_preserved(lines: list[Line], live_ix: list[int], cut: Cut) -> None:
    """``_mark_preserved``: flag the steps the last compaction kept verbatim."""
    boundaries = [i for i in live_ix if lines[i].kind == "system" and lines[i].obj is not None
                  and lines[i].obj.get("subtype") == "compact_boundary"]  # type: ignore[union-attr]  # fmt: skip
    out: dict[int, list[int]] = {}
    for b, comp in zip(boundaries, cut.compactions, strict=False):
        keep = _preserved_uuids(lines, lines[b].obj or {})
        if not keep:
            continue
        wanted = {i for i in live_ix if lines[i].uuid in keep}
        kept = [s.index for s in cut.steps
                if s.index < comp.before_step and any(i in wanted for i in s.lines)]  # fmt: skip
        if kept:
            out[comp.before_step] = kept
    if cut.compactions:
        last = out.get(cut.compactions[-1].before_step, [])
        for s in cut.steps:
            s.preserved = s.index in last


def _preserved_uuids(lines: list[Line], boundary: dict[str, Any]) -> set[str]:
    meta = boundary.get("compactMetadata")
    if not isinstance(meta, dict):
        return set()
    seg = meta.get("preservedSegment")
    if isinstance(seg, dict) and isinstance(seg.get("tailUuid"), str):
        parents = {ln.uuid: ln.parent_uuid for ln in lines if ln.uuid is not None}
        seen: list[str] = []
        cur: Any = seg["tailUuid"]
        while isinstance(cur, str) and cur in parents and cur not in seen:
            seen.append(cur)
            if cur == seg.get("headUuid"):
                return set(seen)
            cur = parents[cur]
    listed = meta.get("preservedMessages")
    uuids = listed.get("uuids") if isinstance(listed, dict) else None
    return {u for u in uuids if isinstance(u, str)} if isinstance(uuids, list) else set()
