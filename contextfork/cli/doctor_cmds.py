"""CLI: ``doctor`` (the checks live in contextfork/doctor.py)."""

from __future__ import annotations

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @guarded("doctor")
    def doctor(repo: RepoOpt = None, json: JsonOpt = False) -> None:
        """Check git, the repo, installed hooks (and that they run), cold stores, the policy,
        the tokenizer cache and the MCP extra; one line each with the fix (exit 1 on an error)."""
        from contextfork import doctor as checks

        emit(checks.run(repo), json)
