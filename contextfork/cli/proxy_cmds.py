"""CLI: ``proxy`` (the local model-API proxy) and ``run`` (a client with the proxy in front).

Thin: parse, then hand over to ``contextfork.proxy`` (aiohttp is imported there, only by these
two commands). Neither is ever served by the warm command server: both own their terminal,
their signals and their children for as long as they run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import RepoOpt, guarded


def register(app: typer.Typer) -> None:
    @app.command("proxy")
    @guarded("proxy")
    def proxy(
        port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free one).",
                                          min=0, max=65535)] = 0,
        upstream: Annotated[str, typer.Option(
            "--upstream", help="Where requests go (default: the vendor's API).")] = "",
        user: Annotated[bool, typer.Option("--user", hidden=True,
                                           help="The per-user proxy `run` starts.")] = False,
        repo: RepoOpt = None,
    ) -> None:
        """Serve the model-API proxy on 127.0.0.1: live folding for any client with a base URL."""
        from contextfork.errors import UsageError
        from contextfork.layout import find_repo
        from contextfork.proxy import daemon
        from contextfork.proxy.server import ANTHROPIC

        if user:
            raise typer.Exit(daemon.run_user_daemon(port))
        url = upstream or ANTHROPIC
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--upstream must be an http(s) URL, got {url!r}")
        root = find_repo(repo or Path.cwd())
        raise typer.Exit(daemon.run_foreground(port, url, root))

    @app.command(
        "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    @guarded("run")
    def run(
        ctx: typer.Context,
        harness: Annotated[str | None, typer.Option(
            "--harness", help="claude | codex (default: from the command's name).")] = None,
        if_enabled: Annotated[bool, typer.Option(
            "--if-enabled", help="Use the proxy only where `hooks install --proxy` made it "
            "the project's default; run the client directly elsewhere.")] = False,
    ) -> None:
        """Run a client with the proxy in front: contextfork run -- claude [ARGS...]."""
        from contextfork.errors import UsageError
        from contextfork.proxy.launcher import run as launch

        if harness not in (None, "claude", "codex"):
            raise UsageError(f"--harness must be claude or codex, got {harness!r}")
        raise typer.Exit(launch(list(ctx.args), harness, if_enabled=if_enabled))
