"""A small Claude Code transcript written the way Claude Code writes them (compact JSON lines).

Shape follows the real files in ../shared/data/transcripts/claude-code: envelope fields on every
line, one API response split over lines sharing message.id/requestId, tool results as user lines
with toolUseResult and sourceToolAssistantUUID, a failing command, recorded usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "11111111-2222-4333-8444-555555555555"
BIG_MARKER = "billing_gateway_timeout"


def big_output() -> str:
    rows = [
        f"src/billing/module_{i:03d}.py:{i}: PORT = 5433  # {BIG_MARKER} retry={i}"
        for i in range(80)
    ]
    return "\n".join(rows)


def lines(
    cwd: Path, *, context_tokens: int = 12_000, session: str = SESSION
) -> list[dict[str, Any]]:
    n = 0
    out: list[dict[str, Any]] = []
    parent: str | None = None

    def env(kind: str, **extra: Any) -> dict[str, Any]:
        nonlocal n, parent
        n += 1
        uid = f"00000000-0000-4000-8000-{n:012d}"
        obj: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": session,
            "version": "2.1.38",
            "gitBranch": "main",
            "type": kind,
        }
        obj.update(extra)
        obj["uuid"] = uid
        obj["timestamp"] = f"2026-02-10T21:{10 + n:02d}:00.000Z"
        parent = uid
        out.append(obj)
        return obj

    def usage(total: int) -> dict[str, int]:
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": 500,
            "cache_read_input_tokens": max(0, total - 503),
            "output_tokens": 40,
        }

    env("user", message={"role": "user", "content": "Fix the billing port bug in src/billing.py"})
    a1 = {
        "model": "claude-opus-4-6",
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "stop_reason": None,
        "usage": usage(context_tokens // 2),
    }
    env(
        "assistant",
        message={**a1, "content": [{"type": "text", "text": "Let me look for the port."}]},
        requestId="req_01",
    )
    last = env(
        "assistant",
        message={
            **a1,
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Bash",
                    "input": {"command": "grep -rn PORT src"},
                }
            ],
        },
        requestId="req_01",
    )
    env(
        "user",
        message={
            "role": "user",
            "content": [
                {
                    "tool_use_id": "toolu_01",
                    "type": "tool_result",
                    "content": big_output(),
                    "is_error": False,
                }
            ],
        },
        toolUseResult={
            "stdout": big_output(),
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        },
        sourceToolAssistantUUID=last["uuid"],
    )
    a2 = {
        "model": "claude-opus-4-6",
        "id": "msg_02",
        "type": "message",
        "role": "assistant",
        "stop_reason": None,
        "usage": usage(context_tokens - 1000),
    }
    last = env(
        "assistant",
        message={
            **a2,
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "Bash",
                    "input": {"command": "pytest -q tests/test_billing.py"},
                }
            ],
        },
        requestId="req_02",
    )
    err = "Exit code 1\nFAILED tests/test_billing.py::test_charge - AssertionError: 5434 != 5433"
    env(
        "user",
        message={
            "role": "user",
            "content": [
                {"type": "tool_result", "content": err, "is_error": True, "tool_use_id": "toolu_02"}
            ],
        },
        toolUseResult="Error: " + err,
        sourceToolAssistantUUID=last["uuid"],
    )
    a3 = {
        "model": "claude-opus-4-6",
        "id": "msg_03",
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "usage": usage(context_tokens),
    }
    env(
        "assistant",
        message={
            **a3,
            "content": [{"type": "text", "text": "The test expects port 5433; config says 5434."}],
        },
        requestId="req_03",
    )
    return out


def write(path: Path, cwd: Path, **kw: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(o, separators=(",", ":")) + "\n" for o in lines(cwd, **kw))
    path.write_text(text)
    return path
