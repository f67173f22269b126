"""A Claude Code 2.1.328 subagent file: sidechain lines plus ``api-request-*`` lines without
``isSidechain`` (seen in tests/e2e/test_claude_slice.py); its conversation must load."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.transcript import load_session
from tests.slice.parent import Writer


def test_a_subagent_file_with_api_request_lines_loads_its_conversation(tmp_path: Path) -> None:
    w = Writer(tmp_path)
    w.prompt("SUBTASK: list the files")
    w.call("Bash", {"command": "ls"}, "a.txt\nb.txt")
    lines = []
    for o in w.out:
        o["isSidechain"], o["agentId"] = True, "a1234"
        lines.append(o)
    lines.insert(1, {"type": "api-request-shape", "sessionId": w.session, "agentId": "a1234"})
    lines.insert(2, {"type": "api-request-blob", "sessionId": w.session,
                     "message": {"role": "user", "content": [{"type": "text", "text": "x"}]}})  # fmt: skip
    path = tmp_path / "agent-a1234.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    session = load_session(path)
    assert session.steps and session.agent_id == "a1234"
    assert [c.name for s in session.steps for c in s.tool_calls] == ["Bash"]
