"""CLI: ``fork`` and ``mcp`` (the harness hooks are under ``hooks run``, see hooks_cmds)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root


def register(app: typer.Typer) -> None:
    @app.command(
        "pi-worker", hidden=True,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )  # fmt: skip
    def pi_worker(ctx: typer.Context) -> None:
        """JSON-lines worker that pi's contextfork extension starts once per pi session (reads
        requests on stdin, answers on stdout); not for interactive use."""
        from contextfork.harness.pi.worker import main

        raise typer.Exit(main(list(ctx.args)))

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
        role: Annotated[str | None, typer.Option(
            "--role", help="Carry only this role's slice of the session (docs/slice.md).")] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Fork even when the next request would not be smaller.")
        ] = False,
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
        if role is not None:
            from contextfork.slice.fork import fork_role

            emit(fork_role(root, path, role), json)
            return
        emit(fork_session(root, path, min_chars=min_chars, force=force), json)

    @app.command("mcp")
    @guarded("mcp")
    def mcp() -> None:
        """Run the MCP server on stdio (tools: status, export, validate, resume, fold paging)."""
        from contextfork.harness.mcp.server import run_stdio

        run_stdio()
