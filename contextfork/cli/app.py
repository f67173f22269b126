"""The Typer application. Each area registers its commands from its own module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="contextfork",
    help="See, fold, render and fork long AI coding-agent sessions without losing anything.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)

# One module per area; each exposes register(app).
_AREAS = (
    "package_cmds",
    "status_cmds",
    "fold_cmds",
    "render_cmds",
    "lifecycle_cmds",
    "hooks_cmds",
    "harness_cmds",
    "view_cmds",
)

for _name in _AREAS:
    importlib.import_module(f"contextfork.cli.{_name}").register(app)
