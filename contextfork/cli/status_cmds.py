"""``contextfork status`` and ``contextfork policy show|init``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded

TranscriptOpt = Annotated[
    Path | None,
    typer.Option("--transcript", help="Transcript file (default: this directory's newest "
                 "Claude Code session)."),
]
WindowOpt = Annotated[
    int | None,
    typer.Option(
        "--context-window", help="Context window size, to show the share used.", min=1
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("status")
    @guarded("status")
    def status(
        transcript: TranscriptOpt = None,
        repo: RepoOpt = None,
        context_window: WindowOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Context telemetry of a session (badge, metrics, risk) and the git state."""
        from contextfork.status import build_status

        emit(build_status(transcript, repo, Path.cwd(), context_window=context_window), as_json)

    policy_app = typer.Typer(help="The context policy (.contextfork/policy.json).",
                             no_args_is_help=True)
    app.add_typer(policy_app, name="policy")

    @policy_app.command("show")
    @guarded("policy show")
    def policy_show(repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
        """Show the effective policy (the file, validated, or the IPSF defaults)."""
        from contextfork.telemetry.policy_cmd import show

        emit(show(repo, Path.cwd()), as_json)

    @policy_app.command("init")
    @guarded("policy init")
    def policy_init(
        repo: RepoOpt = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Write .contextfork/policy.json with the IPSF defaults."""
        from contextfork.telemetry.policy_cmd import init

        emit(init(repo, Path.cwd(), force=force), as_json)

    @app.command(
        "statusline", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def statusline(ctx: typer.Context) -> None:
        """The Claude Code statusLine command: reads its JSON on stdin, prints the badge.

        The console entry point answers this command before Typer loads (it runs after every
        assistant message); it is registered here so that --help and the docs list it, and
        hands its arguments on untouched (statusline.main is their one reader).
        """
        from contextfork.telemetry.statusline import main as statusline_main

        raise typer.Exit(statusline_main(list(ctx.args)))
