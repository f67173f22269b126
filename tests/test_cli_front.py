"""What a new user meets first: --help lists every entry point, completion is there."""

from __future__ import annotations

from tests.helpers import run_cli


def test_help_lists_statusline_and_the_hook_commands() -> None:
    out = run_cli("--help").stdout
    for name in ("statusline", "hooks", "status", "fork", "resume"):
        assert name in out


def test_shell_completion_script_for_bash() -> None:
    # Typer detects the shell from the parent process unless told not to; a test runner's
    # parent need not be a shell, so the shell is named explicitly (as `--show-completion bash`).
    env = {"SHELL": "/bin/bash", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    result = run_cli("--show-completion", "bash", env=env)
    assert result.returncode == 0, result.stderr
    assert "complete" in result.stdout and "contextfork" in result.stdout.lower()
