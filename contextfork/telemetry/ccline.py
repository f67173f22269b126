"""What ``status`` keeps of one Claude Code line: its place in the tree and a digest of its content.

A ``Line`` holds what the live-chain walk and the step cut (``ccsteps``) read, in plain JSON
values, so a pass can be cached and resumed (``cccache``): for an assistant line its message id,
step key, tool-use ids, blocks, usage and model; for a user line its tool results or its prompt;
for a system line whether it is a compaction boundary and what that boundary records. Blocks are
reduced to what the report reads: text and thinking to their character estimate (chars / 4,
``accounting._estimate``), tool calls to (id, name, input), tool results to their estimate,
error flag and exit code, with the text only when the result failed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from contextfork.forkstub import STUB_PREFIX
from contextfork.transcript._content import IMAGE, flatten_text

_CONVERSATION = frozenset({"user", "assistant", "system"})
_EXIT_RE = re.compile(r"^Exit code (-?\d+)")
_MARKERS = {**IMAGE, "document": "[document]"}

# ("est", category, chars estimate) for text and thinking; ("call", id, name, input) (read back
# from the cache: its input cut, and its estimate of the whole input appended, ``cccache``);
# ("result", call_id, chars estimate, is_error, exit_code, text if failed else None, stub?).
Block = tuple[Any, ...]
Usage = tuple[int, int, int, int]  # input, cache creation, cache read, output


class Unsupported(Exception):
    """The fast pass cannot promise the full path's answer for this file: use the full path."""


def estimate(text: str) -> int:
    return (len(text) + 3) // 4


def call_estimate(name: str, inp: dict[str, Any]) -> int:
    """A call's estimate: its name and input as JSON (``accounting``'s text of a call)."""
    return estimate(name + json.dumps(inp, ensure_ascii=False, default=str))


def content_text(content: Any) -> str:
    return flatten_text(content, markers=_MARKERS, strings=True)


def check(obj: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(type, uuid, parentUuid) of a line. The full path hashes these and an assistant's
    message id (sets, frozensets): an unhashable one is its failure to report, not ours."""
    kind, uuid, pu = obj.get("type"), obj.get("uuid"), obj.get("parentUuid")
    for v in (kind, uuid, pu):
        if v is not None and type(v) is not str:
            raise Unsupported("a non-string type, uuid or parentUuid")
    if kind == "assistant":
        msg = obj.get("message")
        mid = msg.get("id") if isinstance(msg, dict) else None
        if mid is not None and type(mid) is not str:
            raise Unsupported("a non-string message id")
    return kind, uuid, pu


class Line:
    """One line: kind, uuid, parent (``parentUuid`` or else ``logicalParentUuid``, when a
    string), ``parentUuid``, forked?, cwd and gitBranch (when strings), and the digest ``d``
    of a conversation line (None for any other)."""

    __slots__ = ("branch", "cwd", "d", "forked", "kind", "parent", "parent_uuid", "uuid")

    kind: str | None
    uuid: str | None
    parent: str | None
    parent_uuid: str | None
    forked: bool
    cwd: str | None
    branch: str | None
    d: list[Any] | None

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Line:
        kind, uuid, pu = check(obj)
        if obj.get("isSidechain"):
            raise Unsupported("sidechain lines in the main file")
        ln = cls()
        ln.kind, ln.uuid, ln.parent_uuid = kind, uuid, pu
        parent = pu or obj.get("logicalParentUuid")
        ln.parent = parent if type(parent) is str else None
        ln.forked = isinstance(obj.get("forkedFrom"), dict)
        cwd, branch = obj.get("cwd"), obj.get("gitBranch")
        ln.cwd = cwd if type(cwd) is str else None
        ln.branch = branch if type(branch) is str else None
        ln.d = _digest(kind, obj) if kind in _CONVERSATION else None
        return ln

    def to_json(self) -> list[Any]:
        return [self.kind, self.uuid, self.parent, self.parent_uuid, self.forked, self.cwd,
                self.branch, self.d]  # fmt: skip

    @classmethod
    def from_json(cls, v: list[Any]) -> Line:
        """A line read back from the cache (``cccache`` checks the file it came from)."""
        ln = cls()
        ln.kind, ln.uuid, ln.parent, ln.parent_uuid, ln.forked, ln.cwd, ln.branch, d = v
        if d is not None and d[0] in ("a", "u"):
            blocks = d[4] if d[0] == "a" else d[2]
            blocks[:] = [tuple(b) for b in blocks]
            if d[0] == "a" and d[5] is not None:
                d[5] = tuple(d[5])
        ln.d = d
        return ln


def _message(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else {}


def _digest(kind: Any, obj: dict[str, Any]) -> list[Any]:
    msg = _message(obj)
    if kind == "assistant":
        key = msg.get("id") or obj.get("requestId") or obj.get("uuid")
        content = msg.get("content")
        calls = ([str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
                 if isinstance(content, list) else [])  # fmt: skip
        raw = msg.get("usage")
        usage = ((_int(raw, "input_tokens"), _int(raw, "cache_creation_input_tokens"),
                  _int(raw, "cache_read_input_tokens"), _int(raw, "output_tokens"))
                 if isinstance(raw, dict) else None)  # fmt: skip
        model = msg.get("model")
        return ["a", msg.get("id"), str(key) if key is not None else None, calls,
                _assistant_blocks(msg), usage, model if isinstance(model, str) else None]  # fmt: skip
    if kind == "user":
        content = msg.get("content")
        results = ([b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                   if isinstance(content, list) else [])  # fmt: skip
        if results:
            return ["u", [str(b.get("tool_use_id")) for b in results], [_result(b) for b in results]]
        text = content_text(content)
        return ["u", [], [("est", "user_history", estimate(text))] if text else []]
    if obj.get("subtype") != "compact_boundary":
        return ["s", False]
    meta = obj.get("compactMetadata")
    meta = meta if isinstance(meta, dict) else {}
    pre, ts = meta.get("preTokens"), obj.get("timestamp")
    seg = meta.get("preservedSegment")
    tail = seg.get("tailUuid") if isinstance(seg, dict) else None
    listed = meta.get("preservedMessages")
    uuids = listed.get("uuids") if isinstance(listed, dict) else None
    return ["s", True, ts if isinstance(ts, str) else None,
            str(meta["trigger"]) if "trigger" in meta else None,
            pre if isinstance(pre, int) else None,
            tail if isinstance(tail, str) else None,
            seg.get("headUuid") if isinstance(tail, str) and isinstance(seg, dict) else None,
            [u for u in uuids if isinstance(u, str)] if isinstance(uuids, list) else None]  # fmt: skip


def _int(d: dict[str, Any], key: str) -> int:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _result(b: dict[str, Any]) -> Block:
    text = content_text(b.get("content"))
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
