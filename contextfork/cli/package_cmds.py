"""CLI: export, validate, demo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded("export")
    def export(
        goal: Annotated[str | None, typer.Option(help="The active goal (handoff part 1).")] = None,
        session: Annotated[str | None, typer.Option(help="Parent session id.")] = None,
        handoff: Annotated[
            Path | None, typer.Option(help="JSON file with handoff parts (schemas/handoff-input).")
        ] = None,
        transcript: Annotated[
            Path | None,
            typer.Option(help="Transcript to seed telemetry and failures (a path, or `auto`)."),
        ] = None,
        trigger: Annotated[str, typer.Option(hidden=True)] = "cli",
        file_cap: Annotated[int, typer.Option(help="Max bytes per untracked snapshot.", min=0)] = 1 << 20,
        with_conversation: Annotated[bool, typer.Option(
            help="Carry the Claude Code session (scrubbed) for `resume --claude`.")] = False,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Write a new verifiable handoff package under .contextfork/packages/."""
        from contextfork.package import api

        result = api.export_from_options(
            repo, goal=goal, session=session, handoff=handoff, transcript=transcript,
            trigger=trigger, file_cap=file_cap, with_conversation=with_conversation,
        )  # fmt: skip
        emit(result, json)

    @app.command()
    @guarded("validate")
    def validate(
        package: Annotated[
            str | None, typer.Argument(help="Package dir or id (default: latest).")
        ] = None,
        strict: Annotated[bool, typer.Option(help="Unfilled placeholders are errors.")] = False,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Check every hash, schema, path, the recorded HEAD and the patch against it."""
        from contextfork.errors import NotFoundError
        from contextfork.package import api

        try:
            root: Path | None = repo_root(repo)
        except NotFoundError:
            if repo is not None or package is None:
                raise
            root = None
        emit(api.validate(root, package, strict=strict), json)

    @app.command()
    @guarded("demo")
    def demo(
        keep: Annotated[bool, typer.Option(help="Keep the temp repo and print its path.")] = False,
        json: JsonOpt = False,
    ) -> None:
        """Run the whole cycle on an embedded sample in a temporary repository."""
        from contextfork.demo import run_demo

        emit(run_demo(keep=keep), json)
