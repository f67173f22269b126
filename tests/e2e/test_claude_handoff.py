"""Real Claude Code: ``/handoff`` makes the model write the parts, contextfork verifies them,
and the next session's first request carries them; a part citing a step that does not exist
is refused. The MCP server and the hooks run the contextfork under test."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import contextfork
from contextfork.harness.hooks import install
from tests.e2e.mock_anthropic import Reply, ToolUse, Usage
from tests.e2e.rigs import ClaudeRig

CF_ROOT = Path(contextfork.__file__).resolve().parents[1]
CF = f"PYTHONPATH={shlex.quote(str(CF_ROOT))} {shlex.quote(sys.executable)} -m contextfork"
TOOL = "mcp__contextfork__export_session_context"
CAT = ToolUse("Bash", {"command": "cat config/port.txt", "description": "Read the port"},
              id="toolu_portcat01")  # fmt: skip


def _setup(claude: ClaudeRig) -> None:
    res = install.install_claude(claude.repo.path, "project", command=CF)
    assert Path(res.data["handoff_command"]["path"]).is_file()
    server = {"type": "stdio", "command": sys.executable, "args": ["-m", "contextfork", "mcp"],
              "env": {"PYTHONPATH": str(CF_ROOT)}}  # fmt: skip
    claude.repo.write(".mcp.json", json.dumps({"mcpServers": {"contextfork": server}}))
    claude.trust_project(mcp_servers=("contextfork",))


def _work(claude: ClaudeRig) -> str:
    claude.mock.script(
        Reply(text="Reading the port config.", tool_uses=[CAT], usage=Usage(input_tokens=3000)),
        Reply(text="config/port.txt does not exist.", usage=Usage(input_tokens=3300)),
    )
    return str(claude.prompt("What port does the config say?")["session_id"])


def _parts(step: str) -> dict[str, Any]:
    return {
        "active_goal": {"goal": "Restore the billing port config at 5433",
                        "acceptance_criteria": ["config/port.txt holds 5433"]},
        "settled_decisions": [{
            "decision": "Recreate config/port.txt rather than searching for it",
            "evidence": [
                {"kind": "step", "ref": step, "note": "`No such file or directory`"},
                {"kind": "command", "ref": "cat config/port.txt", "note": "exit 1"},
                {"kind": "file", "ref": "README.md"},
            ],
        }],
        "failed_approaches": [{
            "approach": "reading config/port.txt", "barred_action": "cat config/port.txt again",
            "error_excerpt": "cat: config/port.txt: No such file or directory",
            "evidence": [{"kind": "step", "ref": step}],
        }],
        "next_action": {"action": "Create config/port.txt with 5433",
                        "command": "echo 5433 > config/port.txt"},
    }  # fmt: skip


def _handoff(claude: ClaudeRig, sid: str, call: ToolUse) -> dict[str, Any]:
    """``/handoff`` in the session; the mock's model calls the tool once it is offered."""
    claude.mock.script(
        Reply(text="Writing the handoff.", tool_uses=[call], usage=Usage(input_tokens=3600),
              when=lambda b: TOOL in json.dumps(b) and call.id not in json.dumps(b)),
        Reply(text="Handoff saved.", usage=Usage(input_tokens=3900),
              when=lambda b: call.id in json.dumps(b)),
        *[Reply(text="Waiting for the tools.", tool_uses=[ToolUse("Bash", {"command": "sleep 1"})],
                when=lambda b: TOOL not in json.dumps(b)) for _ in range(8)],
    )  # fmt: skip
    claude.prompt("/handoff the port config", resume=sid, allowed=(TOOL, "Bash"), timeout=180)
    last = claude.mock.main_requests()[-1]
    asked = next(b for b in claude.mock.main_requests() if call.id in json.dumps(b))
    assert "contextfork checks each item" in json.dumps(asked)  # the command's text was sent
    [result] = [b for m in last["messages"] if isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("tool_use_id") == call.id]  # fmt: skip
    return result  # type: ignore[no-any-return]


def _text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


def test_handoff_parts_are_verified_and_reach_the_next_sessions_first_request(
    claude: ClaudeRig,
) -> None:
    _setup(claude)
    sid = _work(claude)
    result = _handoff(claude, sid, ToolUse(TOOL, _parts(CAT.id), id="toolu_handoff01"))
    assert not result.get("is_error"), result
    [pkg] = claude.packages()
    record = json.loads((pkg / "handoff_claims.json").read_text())
    assert {c["where"]: c["status"] for c in record["claims"]} == {
        "/settled_decisions/0/evidence/0": "verified",
        "/settled_decisions/0/evidence/1": "verified",
        "/settled_decisions/0/evidence/2": "verified",
        "/failed_approaches/0/step": "verified",  # the cited step returned this error
        "/failed_approaches/0/evidence/0": "verified",
    }
    assert record["counts"] == {"verified": 5, "unverified": 0}
    assert record["parts"]["next_action"] == {"source": "model"}
    # A new session: its first request carries the verified parts (SessionStart hook).
    before = len(claude.mock.main_requests())
    claude.mock.script(Reply(text="Creating the file.", usage=Usage(input_tokens=4000)))
    claude.prompt("Carry on.")
    first = json.dumps(claude.mock.main_requests()[before])
    assert pkg.name in first
    assert "Restore the billing port config at 5433" in first
    assert "5 verified by the machine" in first
    assert "[[unfilled" not in first


def test_a_handoff_citing_a_step_that_does_not_exist_is_refused(claude: ClaudeRig) -> None:
    _setup(claude)
    sid = _work(claude)
    result = _handoff(claude, sid, ToolUse(TOOL, _parts("toolu_invented99"), id="toolu_handoff02"))
    text = _text(result)
    assert result.get("is_error") or '"ok": false' in text, result
    assert "no such step" in text and "toolu_invented99" in text
    assert claude.packages() == []
