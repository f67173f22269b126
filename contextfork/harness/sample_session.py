"""The demo's embedded sample session: a Claude Code transcript of the IPCF reference story.

Eight steps of a refactoring session, written exactly the way Claude Code writes transcripts
(compact JSON lines, envelope fields, tool calls and results, recorded usage): the PostgreSQL
port goes 5433 → 5434 → back to 5433; migration V12 is applied, rolled back, patched and
re-applied; a final review. Folding it with the ordinary ``fold_session`` path and asking the
reference question must page back the newest port step, the re-applied migration and the
rollback that explains it — the same answer as ``contextfork.cold.scenario``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork import atomic
from contextfork.cold.scenario import TURNS

SESSION_ID = "d3m0c0de-5e55-4a1e-8000-0000000000c1"
# (tool, input) per step; the file tools give the port steps one intent, the migrate runs another.
_CALLS: tuple[tuple[str, dict[str, str]], ...] = (
    (
        "Edit",
        {
            "file_path": "config/database.yml",
            "old_string": "port: 5432",
            "new_string": "port: 5433",
        },
    ),
    (
        "Edit",
        {
            "file_path": "config/database.yml",
            "old_string": "port: 5433",
            "new_string": "port: 5434",
        },
    ),
    ("Bash", {"command": "flyway migrate"}),
    ("Bash", {"command": "flyway undo"}),
    (
        "Edit",
        {
            "file_path": "config/database.yml",
            "old_string": "port: 5434",
            "new_string": "port: 5433",
        },
    ),
    (
        "Edit",
        {
            "file_path": "db/migrations/V12__create_billing.sql",
            "old_string": "customer_id bigint,",
            "new_string": "customer_id bigint not null references customers(id),",
        },
    ),
    ("Bash", {"command": "flyway migrate"}),
    ("Bash", {"command": "pytest -q"}),
)
_FAILED = {4}  # the rollback step's command reported an error first


def transcript_lines(cwd: Path, *, tokens_per_step: int = 4_300) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent: str | None = None
    n = 0

    def line(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal parent, n
        n += 1
        obj = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": SESSION_ID,
            "version": "2.1.38",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": f"d3m0{n:04d}-0000-4000-8000-000000000000",
            "timestamp": f"2026-02-10T09:{n:02d}:00.000Z",
        }
        parent = obj["uuid"]
        out.append(obj)
        return obj

    line(
        "user",
        message={
            "role": "user",
            "content": "Port the billing service to PostgreSQL and "
            "add the billing table (migration V12).",
        },
    )
    for i, (turn, (tool, inp)) in enumerate(zip(TURNS, _CALLS, strict=True), 1):
        usage = {
            "input_tokens": 4,
            "cache_creation_input_tokens": 600,
            "cache_read_input_tokens": tokens_per_step * i - 604,
            "output_tokens": 120,
        }
        msg = {
            "model": "claude-opus-4-6",
            "id": f"msg_demo_{i:02d}",
            "type": "message",
            "role": "assistant",
            "stop_reason": "tool_use",
            "usage": usage,
        }
        call_id = f"toolu_demo_{i:02d}"
        line(
            "assistant",
            requestId=f"req_demo_{i:02d}",
            message={**msg, "content": [{"type": "text", "text": turn["summary"]}]},
        )
        asked = line(
            "assistant",
            requestId=f"req_demo_{i:02d}",
            message={
                **msg,
                "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": inp}],
            },
        )
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": turn["payload"],
            "is_error": i in _FAILED,
        }
        line(
            "user",
            message={"role": "user", "content": [result]},
            sourceToolAssistantUUID=asked["uuid"],
        )
    return out


def write_transcript(path: Path, cwd: Path) -> Path:
    text = "".join(
        json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n"
        for o in transcript_lines(cwd)
    )
    atomic.write_text(path, text)
    return path
