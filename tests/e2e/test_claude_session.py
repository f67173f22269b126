"""Real Claude Code, hooks installed by contextfork, a plain session with tool calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.e2e.clients import VENV_BIN, run_bounded
from tests.e2e.mock_anthropic import Reply, ToolUse, Usage, request_text
from tests.e2e.rigs import ClaudeRig, claude_slug, contextfork_cmd
from tests.helpers import make_repo


def test_claude_runs_a_real_bash_tool_call_and_status_equals_the_mocks_usage(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    claude.repo.write("notes.txt", "zorblax=7\n")
    last = Usage(input_tokens=4321, output_tokens=55, cache_creation_input_tokens=100, cache_read_input_tokens=2000)
    claude.mock.script(
        Reply(
            text="Let me look at the repository.",
            tool_uses=[ToolUse("Bash", {"command": "git status --short && cat notes.txt", "description": "Show status"})],
            usage=Usage(input_tokens=3000, output_tokens=40, cache_read_input_tokens=500),
        ),
        Reply(text="notes.txt is untracked and holds zorblax=7.", usage=last),
    )

    result = claude.prompt("What is the state of the repo?")

    mains = claude.mock.main_requests()
    assert len(mains) == 2, [m["messages"][-1] for m in mains]
    tool_result = mains[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    # the command really ran, in the real repository
    assert "?? notes.txt" in json.dumps(tool_result) and "zorblax=7" in json.dumps(tool_result)

    status = claude.contextfork_json("status")["data"]
    assert status["session"]["session_id"] == result["session_id"]
    assert status["tokens"]["source"] == "recorded"
    assert status["tokens"]["total"] == last.context == 6421
    assert status["steps"]["tool_calls"] == 1
    # the SessionStart and UserPromptSubmit hooks ran (and found nothing to do): no errors logged
    assert [e for e in claude.hooks_log() if e.get("level") == "error"] == []


def test_a_pending_package_reaches_the_model_through_session_start(claude: ClaudeRig) -> None:
    claude.contextfork("hooks", "install", "--claude", "--project")
    pkg = claude.contextfork_json("export", "--goal", "Port billing to the quuxinator currency API")["data"]

    claude.prompt("Carry on.")

    first = claude.mock.main_requests()[0]
    text = request_text(first)
    assert pkg["package_id"] in text, "the resume brief was not injected"
    assert "quuxinator" in text


def test_hooks_fire_when_the_venv_is_not_on_path(claude: ClaudeRig) -> None:
    """Claude started from a shell without the venv still runs our hooks (absolute paths)."""
    claude.contextfork("hooks", "install", "--claude", "--project")
    pkg = claude.contextfork_json("export", "--goal", "Teach the frobnicator to count")["data"]
    env = dict(claude.env)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != VENV_BIN)

    claude.prompt("Carry on.", env=env)

    text = request_text(claude.mock.main_requests()[0])
    errors = [e for e in claude.hooks_log() if e.get("level") == "error"]
    assert pkg["package_id"] in text, f"SessionStart did not run without the venv on PATH; hooks.log errors: {errors}"


def test_claude_code_project_folder_slug_rule(claude: ClaudeRig) -> None:
    """Where Claude Code 2.1.328 writes a project's transcripts, and that status finds them.

    Rule (observed): every UTF-16 code unit of the cwd outside [A-Za-z0-9] becomes "-"; a slug
    over 200 characters is cut to 200 + "-" + base36(|32-bit Java string hash of the cwd|).
    """
    odd = claude.tmp / "my proj.v2_ü+x"
    deep = claude.tmp / ("L" + "x" * 120) / ("y" * 100)
    for where in (odd, deep):
        where.mkdir(parents=True)
        make_repo(where)
        claude.mock.script(Reply(text="hello", usage=Usage(input_tokens=1234)))
        run = run_bounded(
            [str(claude.bin), "-p", "hi", "--output-format", "json"], cwd=where, env=claude.env, timeout=90
        )
        assert run.returncode == 0, run
        sid = json.loads(run.stdout)["session_id"]
        folder = claude.config_dir / "projects" / claude_slug(str(where.resolve()))
        assert (folder / f"{sid}.jsonl").is_file(), sorted(p.name for p in (claude.config_dir / "projects").iterdir())
        status = run_bounded(
            [*contextfork_cmd(), "status", "--json"],
            cwd=where, env=claude.env, timeout=120,
        )
        assert status.returncode == 0, status
        session = json.loads(status.stdout)["data"]["session"] or {}
        assert session.get("session_id") == sid, f"status did not find the session in {folder.name}"
    assert len(claude_slug(str(deep))) > 200
