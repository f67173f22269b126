"""Small hand-written transcripts in each harness's real shape (compact JSON, like the harness)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def write_jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else dumps(r)) + "\n" for r in records) + tail
    path.write_text(text, encoding="utf-8")
    return path


class CC:
    """Builds Claude Code lines with uuids u1, u2, ... and a parentUuid chain."""

    def __init__(self, session_id: str = "sess-1", cwd: str = "/home/u/proj") -> None:
        self.n = 0
        self.session_id = session_id
        self.cwd = cwd
        self.last: str | None = None

    def _base(self, kind: str, parent: str | None, **extra: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"u{self.n}"
        rec = {
            "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session_id, "version": "2.1.38", "gitBranch": "main",
            "type": kind, "uuid": uid, "timestamp": f"2026-02-10T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
        }
        rec.update(extra)
        self.last = uid
        return rec

    def _parent(self, parent: str | bool | None) -> str | None:
        return self.last if parent is True else (parent or None)

    def user(self, text: str, parent: str | bool | None = True, **extra: Any) -> dict[str, Any]:
        return self._base("user", self._parent(parent), message={"role": "user", "content": text}, **extra)

    def assistant(
        self, mid: str, content: list[dict[str, Any]], *, parent: str | bool | None = True,
        rid: str | None = None, usage: tuple[int, int, int, int] = (3, 10, 100, 1000),
        model: str = "claude-opus-4-6", **extra: Any,
    ) -> dict[str, Any]:
        inp, out, cc, cr = usage
        msg = {
            "model": model, "id": mid, "type": "message", "role": "assistant", "content": content,
            "stop_reason": None, "usage": {"input_tokens": inp, "cache_creation_input_tokens": cc,
                                           "cache_read_input_tokens": cr, "output_tokens": out},
        }
        return self._base("assistant", self._parent(parent), requestId=rid or f"req-{mid}",
                          message=msg, **extra)

    def result(self, call_id: str, text: str, *, parent: str | bool | None = True,
               is_error: bool = False) -> dict[str, Any]:
        block = {"tool_use_id": call_id, "type": "tool_result", "content": text, "is_error": is_error}
        return self._base("user", self._parent(parent),
                          message={"role": "user", "content": [block]}, toolUseResult=text)

    def progress(self, parent: str | bool | None = True) -> dict[str, Any]:
        return self._base("progress", self._parent(parent), data={"type": "hook_progress"})

    def boundary(self, logical_parent: str, pre_tokens: int = 167000) -> dict[str, Any]:
        return self._base("system", None, logicalParentUuid=logical_parent, subtype="compact_boundary",
                          content="Conversation compacted", isMeta=False,
                          compactMetadata={"trigger": "auto", "preTokens": pre_tokens})

    def summary(self, text: str) -> dict[str, Any]:
        return self._base("user", self.last, message={"role": "user", "content": text},
                          isCompactSummary=True, isVisibleInTranscriptOnly=True)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(call_id: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": inp}


def thinking(t: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "signature": "sig"}
