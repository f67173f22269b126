"""CLI: ``fork``, ``mcp`` and the help text of ``hook`` (the hooks themselves bypass Typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root

_HOOK_HELP = """Harness hook commands (run by Claude Code / Codex, JSON on stdin).

They are dispatched before Typer loads (contextfork/entry.py), always exit 0, and print
hook JSON or nothing; errors go to .contextfork/logs/hooks.log.
Install them with `contextfork hooks install --claude` or `--codex`."""


def register(app: typer.Typer) -> None:
    @app.command("fork")
    @guarded("fork")
    def fork(
        transcript: Annotated[
            Path | None,
            typer.Option(
                "--transcript", help="Claude Code session (default: this project's newest)."
            ),
        ] = None,
        min_chars: Annotated[
            int, typer.Option("--min-chars", help="Stub tool results at least this long.")
        ] = 2000,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Export a package, then write a folded continuation session and print `claude --resume`."""
        from contextfork.errors import NotFoundError
        from contextfork.harness.fork import fork_session
        from contextfork.transcript.locate import current_transcript

        root = repo_root(repo)
        path = transcript or current_transcript(root)
        if path is None:
            raise NotFoundError(
                f"no Claude Code session found for {root}", hint="pass --transcript PATH"
            )
        emit(fork_session(root, path, min_chars=min_chars), json)

    @app.command("mcp")
    @guarded("mcp")
    def mcp() -> None:
        """Run the MCP server on stdio (tools: status, export, validate, resume, fold paging)."""
        from contextfork.harness.mcp_server import run_stdio

        run_stdio()

    hook = typer.Typer(help=_HOOK_HELP, no_args_is_help=True)
    app.add_typer(hook, name="hook")

    @hook.command("user-prompt-submit")
    def user_prompt_submit(
        codex: Annotated[bool, typer.Option("--codex", help="Input comes from Codex.")] = False,
    ) -> None:
        """Page folded details the prompt names back in (hookSpecificOutput.additionalContext,
        hash-verified, ≤ 9,500 chars); warn once when the footprint crosses a threshold."""

    @hook.command("pre-compact")
    def pre_compact(
        codex: Annotated[bool, typer.Option("--codex", help="Input comes from Codex.")] = False,
    ) -> None:
        """Before the harness compacts: fold the whole transcript and export a package."""

    @hook.command("session-start")
    def session_start(
        codex: Annotated[bool, typer.Option("--codex", help="Input comes from Codex.")] = False,
    ) -> None:
        """After compact: inject the latest handoff brief. At startup/resume: validate an
        unconsumed package and inject its resume brief with the drift report."""
