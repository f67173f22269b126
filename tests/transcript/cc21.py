"""A small Claude Code 2.1.x session with two compactions, in the shape 2.1.328 writes.

Shape copied from a session recorded with the real ``claude`` 2.1.328 against a local mock:
``attachment`` lines chained by ``parentUuid`` like messages, uuid-less bookkeeping lines
(``queue-operation``, ``api-request``, ``api-request-blob``, ``cost-state``), a
``compact_boundary`` with ``parentUuid: null``, ``logicalParentUuid`` and
``compactMetadata.preservedSegment {headUuid, anchorUuid, tailUuid}`` where the anchor is the
``isCompactSummary`` user line that follows. The second boundary's ``logicalParentUuid`` names a
line that is not in the file (Claude Code does not promise it is).

Steps (file order): 1 run tests (Bash, fails) · 2 says so · 3 fix it (Edit) · 4 fixed ·
[compaction 1 keeps 3–4 verbatim] · 5 run lint (Bash) · 6 lint clean ·
[compaction 2 keeps 6 verbatim] · 7 answers the last question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.transcript.builders import dumps

SESSION = "21212121-2121-4121-8121-212121212121"


class _Writer:
    def __init__(self, cwd: str) -> None:
        self.lines: list[dict[str, Any]] = []
        self.cwd = cwd
        self.n = 0
        self.last: str | None = None

    def uid(self, name: str) -> str:
        return f"00000000-0000-4000-8000-{name.encode().hex():0>12}"

    def line(self, kind: str, name: str | None, parent: str | bool | None = True,
             **extra: Any) -> dict[str, Any]:
        self.n += 1
        obj: dict[str, Any] = {}
        if name is not None:
            obj["parentUuid"] = self.last if parent is True else (parent or None)
            obj["isSidechain"] = False
        obj["type"] = kind
        obj.update(extra)
        if name is not None:
            obj["uuid"] = self.uid(name)
            obj["timestamp"] = f"2026-11-30T20:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
            obj.update({"userType": "external", "entrypoint": "cli", "cwd": self.cwd,
                        "sessionId": SESSION, "version": "2.1.328", "gitBranch": "main"})
            self.last = obj["uuid"]
        else:
            obj["sessionId"] = SESSION
        self.lines.append(obj)
        return obj

    def user(self, name: str, text: str, **extra: Any) -> dict[str, Any]:
        return self.line("user", name, message={"role": "user", "content": text}, **extra)

    def attachment(self, name: str, kind: str = "date") -> dict[str, Any]:
        return self.line("attachment", name, attachment={"type": kind, "date": "2026-11-30"})

    def assistant(self, name: str, mid: str, block: dict[str, Any],
                  context: int = 20_000) -> dict[str, Any]:
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 200,
                 "cache_read_input_tokens": context - 203, "output_tokens": 30}
        msg = {"model": "claude-opus-5-5", "id": mid, "type": "message", "role": "assistant",
               "content": [block], "stop_reason": None, "usage": usage}
        return self.line("assistant", name, message=msg, requestRef=f"req-{mid}")

    def result(self, name: str, call: str, text: str, is_error: bool = False) -> dict[str, Any]:
        block = {"tool_use_id": call, "type": "tool_result", "content": text, "is_error": is_error}
        return self.line("user", name, message={"role": "user", "content": [block]},
                         toolUseResult={"stdout": text, "stderr": ""})

    def bookkeeping(self, kind: str, **extra: Any) -> None:
        self.line(kind, None, **extra)

    def boundary(self, name: str, logical_parent: str, head: str, tail: str,
                 anchor: str) -> dict[str, Any]:
        meta = {"trigger": "auto", "preTokens": 167_000, "postTokens": 9_000,
                "preservedSegment": {"headUuid": self.uid(head), "anchorUuid": self.uid(anchor),
                                     "tailUuid": self.uid(tail)}}
        return self.line("system", name, parent=None, subtype="compact_boundary",
                         content="Conversation compacted", isMeta=False, level="info",
                         logicalParentUuid=logical_parent, compactMetadata=meta)


def lines(cwd: str = "/home/u/proj", *, second_compaction: bool = True,
          grow: int = 0) -> list[dict[str, Any]]:
    """The session's lines; ``grow`` > 0 appends that many extra Read calls at the end."""
    w = _Writer(cwd)
    w.bookkeeping("queue-operation", operation="enqueue", content="run the tests")
    w.user("p1", "run the tests")
    w.attachment("a1", "environment")
    w.bookkeeping("api-request-blob", hash="b1", message={"role": "user", "content": "run"})
    w.bookkeeping("api-request", id="r1", params={"model": "claude-opus-5-5"})
    w.assistant("s1", "msg_01", {"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                 "input": {"command": "pytest -q"}})
    w.result("r1", "toolu_01", "Exit code 1\nFAILED tests/test_port.py::test_port - 5434 != 5433",
             is_error=True)
    w.attachment("a2")
    w.assistant("s2", "msg_02", {"type": "text", "text": "test_port fails: 5434 != 5433."})
    w.bookkeeping("cost-state", totalCostUSD=0.01)
    w.user("p2", "fix it")
    w.assistant("s3", "msg_03", {"type": "tool_use", "id": "toolu_02", "name": "Edit",
                                 "input": {"file_path": "src/port.py", "old_string": "5434",
                                           "new_string": "5433"}})
    w.result("r2", "toolu_02", "The file src/port.py has been updated.")
    w.assistant("s4", "msg_04", {"type": "text", "text": "Fixed the port in src/port.py."})
    w.boundary("b1", w.uid("s4"), head="p2", tail="s4", anchor="sum1")
    w.user("sum1", "This session is being continued from a previous conversation. Summary: "
                   "the port test failed and was fixed.", isCompactSummary=True,
           isVisibleInTranscriptOnly=True)
    w.attachment("a3", "deferred_tools_delta")
    w.user("p3", "now run the linter")
    w.assistant("s5", "msg_05", {"type": "tool_use", "id": "toolu_03", "name": "Bash",
                                 "input": {"command": "ruff check ."}})
    w.result("r3", "toolu_03", "All checks passed!")
    w.assistant("s6", "msg_06", {"type": "text", "text": "Lint is clean."})
    if second_compaction:
        # Claude Code may name a line the file does not hold: the history must go on anyway.
        w.boundary("b2", "ffffffff-ffff-4fff-8fff-ffffffffffff", head="s6", tail="s6",
                   anchor="sum2")
        w.user("sum2", "This session is being continued from a previous conversation. Summary: "
                       "port fixed, lint clean.", isCompactSummary=True,
               isVisibleInTranscriptOnly=True)
        w.user("p4", "which port do we use?")
        w.assistant("s7", "msg_07", {"type": "text", "text": "5433."})
    for i in range(grow):
        w.user(f"g{i}p", f"read file {i}")
        w.assistant(f"g{i}a", f"msg_g{i}", {"type": "tool_use", "id": f"toolu_g{i}",
                                             "name": "Read", "input": {"file_path": f"f{i}.py"}})
        w.result(f"g{i}r", f"toolu_g{i}", f"contents of f{i}.py")
    w.bookkeeping("last-prompt", lastPrompt="x", leafUuid=w.last)
    return w.lines


def write(path: Path, cwd: str = "/home/u/proj", **kw: Any) -> Path:
    return write_lines(path, lines(cwd, **kw))


def write_lines(path: Path, objs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def upto(name: str, **kw: Any) -> list[dict[str, Any]]:
    """The session as it was on disk right after the line ``name`` was written (mid-turn)."""
    objs = lines(**kw)
    cut = next(i for i, o in enumerate(objs) if o.get("uuid") == uid(name))
    return objs[: cut + 1]


def uid(name: str) -> str:
    return _Writer("").uid(name)
