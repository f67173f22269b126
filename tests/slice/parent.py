"""A parent Claude Code session with work a subagent could need, written as Claude Code does.

It reads a file range, edits a file, runs a failing then a passing test command, fails a shell
command once, and ends with an Agent call (or two parallel ones) whose task names a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


class Writer:
    def __init__(self, cwd: Path, session: str = SESSION) -> None:
        self.cwd, self.session = cwd, session
        self.out: list[dict[str, Any]] = []
        self.n = 0
        self.parent: str | None = None

    def env(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"00000000-0000-4000-8000-{self.n:012d}"
        obj = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
               "cwd": str(self.cwd), "sessionId": self.session, "version": "2.1.328",
               "gitBranch": "main", "type": kind, **extra, "uuid": uid,
               "timestamp": f"2026-12-01T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"}  # fmt: skip
        self.parent = uid
        self.out.append(obj)
        return obj

    def prompt(self, text: str) -> None:
        self.env("user", message={"role": "user", "content": text})

    def call(self, name: str, inp: dict[str, Any], result: str, *, error: bool = False) -> str:
        cid = f"toolu_{self.n:04d}"
        msg = {"model": "claude-opus-5-5", "id": f"msg_{self.n:04d}", "type": "message",
               "role": "assistant", "stop_reason": "tool_use",
               "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                         "cache_read_input_tokens": 40000, "output_tokens": 20},
               "content": [{"type": "tool_use", "id": cid, "name": name, "input": inp}]}  # fmt: skip
        self.env("assistant", message=msg, requestId=f"req_{self.n:04d}")
        block: dict[str, Any] = {"tool_use_id": cid, "type": "tool_result", "content": result}
        if error:
            block["is_error"] = True
        self.env("user", message={"role": "user", "content": [block]})
        return cid

    def agents(self, *calls: dict[str, Any]) -> None:
        """Parallel agent calls the way Claude Code 2.1.328 writes them: one line per tool_use,
        all sharing the response's message id."""
        mid = f"msg_{self.n:04d}"
        for i, c in enumerate(calls):
            block = {"type": "tool_use", "id": f"toolu_{mid}_{i}", "name": "Agent", "input": c}
            msg = {"model": "claude-opus-5-5", "id": mid, "type": "message", "role": "assistant",
                   "stop_reason": "tool_use", "content": [block],
                   "usage": {"input_tokens": 3, "output_tokens": 20}}  # fmt: skip
            self.env("assistant", message=msg, requestId=f"req_{mid}")

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in self.out))
        return path


def parent_session(cwd: Path, *agent_calls: dict[str, Any]) -> Writer:
    w = Writer(cwd)
    w.prompt("Make the invoice rounding use banker's rounding in src/invoice.py")
    w.call("Read", {"file_path": f"{cwd}/src/invoice.py", "offset": 10, "limit": 20},
           "10\tdef total(items):\n11\t    return round(sum(i.price for i in items), 2)  # ZORBLAX")
    w.call("Edit", {"file_path": f"{cwd}/src/invoice.py", "old_string": "round(", "new_string": "bankers_round("},
           "The file src/invoice.py has been updated.")
    w.call("Bash", {"command": "pytest tests/test_invoice.py -q"},
           "Exit code 1\nFAILED tests/test_invoice.py::test_half_even - assert 2.5 == 2.0\n1 failed", error=True)
    w.call("Bash", {"command": "pip install bankers-round"}, "Exit code 1\nERROR: no such package", error=True)
    w.call("Edit", {"file_path": f"{cwd}/tests/test_invoice.py", "old_string": "2.5", "new_string": "2.0"},
           "The file tests/test_invoice.py has been updated.")
    w.call("Bash", {"command": "pytest tests/test_invoice.py -q"}, "3 passed in 0.02s")
    if agent_calls:
        w.agents(*agent_calls)
    return w
