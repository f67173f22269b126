"""What a new user meets first: --help lists every entry point, completion is there."""

from __future__ import annotations

from tests.helpers import run_cli


def test_help_lists_statusline_and_the_hook_commands() -> None:
    out = run_cli("--help").stdout
    for name in ("statusline", "hooks", "status", "fork", "resume"):
        assert name in out


def test_shell_completion_script_for_bash() -> None:
    result = run_cli("--show-completion", "bash", env={"SHELL": "/bin/bash"})
    assert result.returncode == 0, result.stderr
    assert "complete" in result.stdout and "contextfork" in result.stdout.lower()
