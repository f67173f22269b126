"""Real Claude Code compacting (``/compact`` and auto-compaction) with contextfork's hooks."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.mock_anthropic import Reply, ToolUse, Usage, request_text
from tests.e2e.rigs import ClaudeRig

PAGED_HEAD = "contextfork paged these exact details"


def _bash(command: str, usage: int = 3000) -> Reply:
    return Reply(
        text="Running a command.",
        tool_uses=[ToolUse("Bash", {"command": command, "description": "Run a command"})],
        usage=Usage(input_tokens=usage),
    )


def _configure_database(claude: ClaudeRig) -> str:
    """Turn 1: two tool calls (one fails) in a real repo; returns the session id."""
    claude.mock.script(
        _bash("printf 'db_port=5433\\nfrobozz_key=alpha\\n' > db.conf && cat db.conf"),
        _bash("ls /nonexistent-zorblax-dir"),
        Reply(text="Configured the database settings.", usage=Usage(input_tokens=5200, output_tokens=30)),
    )
    return str(claude.prompt("Configure the database settings in db.conf")["session_id"])


def _pre_compact_entries(claude: ClaudeRig, session_id: str) -> list[dict[str, Any]]:
    return [e for e in claude.hooks_log() if e.get("event") == "pre-compact" and e.get("session_id") == session_id]


def _triggers(claude: ClaudeRig) -> list[str]:
    return [json.loads((p / "session_metadata.json").read_text())["trigger"] for p in claude.packages()]


def test_manual_compact_folds_exports_injects_the_brief_and_pages_details_back(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    sid = _configure_database(claude)
    before = claude.contextfork_json("status")["data"]
    assert before["steps"]["total"] >= 3 and len(before["failed_commands"]) == 1, before["steps"]

    claude.prompt("/compact", resume=sid, allowed=())

    assert len(claude.mock.message_requests("compact")) == 1, "the mock never saw the summary request"
    folds = _pre_compact_entries(claude, sid)
    assert len(folds) == 1 and folds[0].get("folded_steps", 0) >= 3 and folds[0].get("package_id"), claude.hooks_log()
    assert _triggers(claude) == ["pre-compact"]
    assert (claude.repo.path / ".contextfork" / "cold" / sid).is_dir()

    after = claude.contextfork_json("status")["data"]
    assert after["steps"]["total"] >= before["steps"]["total"], "history before the compaction was lost"
    assert len(after["failed_commands"]) == 1, after["failed_commands"]
    assert len(after["compactions"]) == 1

    claude.mock.script(Reply(text="It is alpha.", usage=Usage(input_tokens=2500)))
    claude.prompt("Which frobozz_key did we write to db.conf?", resume=sid)

    text = request_text(claude.mock.main_requests()[-1])
    assert folds[0]["package_id"] in text, "SessionStart(compact) did not inject the brief"
    assert PAGED_HEAD in text, "UserPromptSubmit paged nothing back in"
    assert "frobozz_key=alpha" in text, "the folded step holding the answer was not paged in"


def test_auto_compaction_twice_in_one_session_folds_and_exports_both_times(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    # A 100k window (the smallest Claude Code accepts): a reply reporting 95k tokens makes it
    # compact before the next call. (The first call of a run is never followed by a compaction.)
    claude.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = "100000"
    claude.mock.script(
        _bash("echo first-step-grault"),
        _bash("echo second-step-garply", usage=95_000),
        _bash("echo third-step-waldo"),
        _bash("echo fourth-step-fred"),
        _bash("echo fifth-step-plugh", usage=95_000),
        _bash("echo sixth-step-xyzzy"),
        Reply(text="All steps ran.", usage=Usage(input_tokens=4000)),
    )

    sid = str(claude.prompt("Run the six steps")["session_id"])

    assert len(claude.mock.message_requests("compact")) == 2, "Claude Code did not auto-compact twice"
    folds = _pre_compact_entries(claude, sid)
    errors = [e for e in claude.hooks_log() if e.get("level") == "error"]
    assert len(folds) == 2, f"PreCompact ran {len(folds)} times; errors: {errors}"
    assert all(f.get("trigger") == "auto" for f in folds)
    assert all(f.get("package_id") for f in folds), f"a PreCompact exported no package: {folds} {errors}"
    assert folds[1].get("folded_steps", 0) >= folds[0].get("folded_steps", 0), folds
    assert _triggers(claude) == ["pre-compact", "pre-compact"]
    assert errors == []

    fold = claude.contextfork_json("fold", "validate", "--session", sid)
    assert fold["ok"], fold["problems"]
    status = claude.contextfork_json("status")["data"]
    assert status["steps"]["tool_calls"] == 6, status["steps"]
    assert len(status["compactions"]) == 2


def test_a_compaction_package_is_not_handed_to_another_new_session(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    sid = _configure_database(claude)
    claude.prompt("/compact", resume=sid, allowed=())
    [pkg] = claude.packages()

    claude.mock.script(Reply(text="Hello.", usage=Usage(input_tokens=1500)))
    other = claude.prompt("Something unrelated")

    assert other["session_id"] != sid
    text = request_text(claude.mock.main_requests()[-1])
    assert pkg.name not in text, "the package made for one session was handed to a new one"


def test_auto_compactions_in_two_prompts_of_one_session_fold_and_export_both_times(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    claude.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = "100000"
    claude.mock.script(
        _bash("echo first-step-grault"),
        _bash("echo second-step-garply", usage=95_000),
        _bash("echo third-step-waldo"),
        Reply(text="First part done.", usage=Usage(input_tokens=4000)),
    )
    sid = str(claude.prompt("Run the first part")["session_id"])
    claude.mock.script(
        _bash("echo fourth-step-fred"),
        _bash("echo fifth-step-plugh", usage=95_000),
        _bash("echo sixth-step-xyzzy"),
        Reply(text="Second part done.", usage=Usage(input_tokens=4000)),
    )
    claude.prompt("Run the second part", resume=sid)

    assert len(claude.mock.message_requests("compact")) == 2, "Claude Code did not auto-compact twice"
    folds = _pre_compact_entries(claude, sid)
    errors = [e for e in claude.hooks_log() if e.get("level") == "error"]
    assert len(folds) == 2 and all(f.get("package_id") for f in folds), f"folds: {folds}; errors: {errors}"
    assert folds[1].get("folded_steps", 0) > folds[0].get("folded_steps", 0), folds
    assert _triggers(claude) == ["pre-compact", "pre-compact"]
    assert errors == []
    status = claude.contextfork_json("status")["data"]
    assert status["steps"]["tool_calls"] == 6, status["steps"]
    assert len(status["compactions"]) == 2


def test_two_manual_compactions_of_one_session_fold_and_export_both_times(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    sid = _configure_database(claude)
    claude.prompt("/compact", resume=sid, allowed=())
    claude.mock.script(
        _bash("echo second-turn-wibble"),
        Reply(text="Second turn done.", usage=Usage(input_tokens=3300)),
    )
    claude.prompt("Do the second part", resume=sid)

    claude.prompt("/compact", resume=sid, allowed=())

    folds = _pre_compact_entries(claude, sid)
    errors = [e for e in claude.hooks_log() if e.get("level") == "error"]
    assert len(folds) == 2 and all(f.get("package_id") for f in folds), f"folds: {folds}; errors: {errors}"
    assert errors == []
    assert _triggers(claude) == ["pre-compact", "pre-compact"]
    status = claude.contextfork_json("status")["data"]
    assert status["steps"]["tool_calls"] == 3, status["steps"]
    assert len(status["failed_commands"]) == 1
    assert claude.contextfork_json("fold", "validate", "--session", sid)["ok"]


def test_the_compaction_brief_bars_the_failed_command_in_plain_words(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    sid = _configure_database(claude)
    claude.prompt("/compact", resume=sid, allowed=())
    claude.mock.script(Reply(text="Noted.", usage=Usage(input_tokens=2500)))
    claude.prompt("Go on", resume=sid)

    text = request_text(claude.mock.main_requests()[-1])
    assert "context after compaction" in text, "the brief did not reach the model"
    shield = text[text.index("Do not retry") :] if "Do not retry" in text else ""
    assert "ls /nonexistent-zorblax-dir" in shield, "the failed command is not barred"
    doubled = [m.group(0) for m in re.finditer(r"(?i)\bdo not\W+do not\b|\((step \d+)\)\s*\(\1\)", text)]
    assert doubled == [], f"doubled words in the brief: {doubled}"
