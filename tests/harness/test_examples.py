"""The shipped harness configs match what `hooks install` writes, and their commands really run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from contextfork.cold.scenario import REFERENCE_QUESTION, build_reference_scenario
from contextfork.harness.hooks import install
from tests.helpers import Repo, clean_env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# The examples are for writing configs by hand, so they use the bare name (it must then be on
# the harness's PATH); `hooks install` writes the same entries behind the absolute entry point.


def test_claude_settings_example_is_what_install_writes(tmp_path: Path) -> None:
    install.install_claude(tmp_path, "shared")  # the committed file: the portable bare command
    written = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert json.loads((EXAMPLES / "claude-code" / "settings.json").read_text()) == written


def test_codex_hooks_example_is_what_install_writes(tmp_path: Path) -> None:
    install.install_codex(tmp_path, command="contextfork")
    written = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert json.loads((EXAMPLES / "codex" / "hooks.json").read_text()) == written


def test_mcp_configs_start_the_stdio_server() -> None:
    for rel in (
        "claude-code/.mcp.json",
        "claude-desktop/claude_desktop_config.json",
        "cursor/mcp.json",
    ):
        server = json.loads((EXAMPLES / rel).read_text())["mcpServers"]["contextfork"]
        assert (server["command"], server["args"]) == ("contextfork", ["mcp"]), rel
    roots = json.loads((EXAMPLES / "claude-desktop/claude_desktop_config.json").read_text())
    assert all(
        p.startswith("/")
        for p in roots["mcpServers"]["contextfork"]["env"]["CONTEXTFORK_ALLOWED_ROOTS"].split(";")
    )
    toml = tomllib.loads((EXAMPLES / "codex" / "config.toml").read_text())
    assert toml["features"]["hooks"] is True
    assert toml["mcp_servers"]["contextfork"] == {"command": "contextfork", "args": ["mcp"]}


def test_the_example_hook_command_runs_through_a_shell(repo: Repo) -> None:
    build_reference_scenario(repo.path / ".contextfork" / "cold" / "example-session")
    settings = json.loads((EXAMPLES / "claude-code" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = clean_env(
        {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    )
    payload = {
        "session_id": "example-session",
        "transcript_path": "",
        "cwd": str(repo.path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": REFERENCE_QUESTION,
    }
    proc = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=repo.path,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
