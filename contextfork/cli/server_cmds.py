"""CLI: ``server enable|disable|start|status|stop`` (the command server: contextfork/server/)."""

from __future__ import annotations

from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, emit, guarded


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="The warm command server that runs contextfork commands without start-up cost "
        "(off by default: `server enable` turns it on; CONTEXTFORK_SERVER=on|off overrides).",
        no_args_is_help=True,
    )
    app.add_typer(group, name="server")

    @group.command("enable")
    @guarded("server enable")
    def enable(json: JsonOpt = False) -> None:
        """Serve commands from now on (kept in your config directory), in the same context only."""
        from contextfork.server import control

        emit(control.choose(True), json)

    @group.command("disable")
    @guarded("server disable")
    def disable(json: JsonOpt = False) -> None:
        """Run every command cold from now on, and stop the servers running."""
        from contextfork.server import control

        emit(control.choose(False), json)

    @group.command("status")
    @guarded("server status")
    def status(json: JsonOpt = False) -> None:
        """Whether a server runs for this installation, its pid, socket and commands served."""
        from contextfork.server import control

        emit(control.status(), json)

    @group.command("start")
    @guarded("server start")
    def start(json: JsonOpt = False) -> None:
        """Start the server now (commands otherwise start it on first use) and wait for it."""
        from contextfork.server import control

        emit(control.start(), json)

    @group.command("stop")
    @guarded("server stop")
    def stop(
        everything: Annotated[
            bool, typer.Option("--all", help="Every server in the directory (other builds too).")
        ] = False,
        json: JsonOpt = False,
    ) -> None:
        """Stop the server (running commands finish first; the next command starts a new one)."""
        from contextfork.server import control

        emit(control.stop(everything), json)
