"""MkDocs hook: the CLI reference page is generated from the Typer app at build time.

Why a hook and not a committed page: a page written by hand (or generated once and committed)
drifts from the commands; this one is rebuilt from the same click objects that parse argv.
Typer vendors click (typer._click), so the walk reads attributes instead of isinstance checks.
"""

from __future__ import annotations

from typing import Any

import typer.main

MARKER = "<!-- cli-reference -->"


def _usage(cmd: Any, path: list[str]) -> str:
    ctx = cmd.context_class(cmd, info_name=" ".join(path))
    pieces = cmd.collect_usage_pieces(ctx)
    return " ".join([*path, *pieces])


def _params(cmd: Any) -> list[str]:
    rows: list[str] = []
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            name = f"`{p.human_readable_name}`"
            help_text = getattr(p, "help", None) or ""
        else:
            name = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            help_text = getattr(p, "help", None) or ""
        help_text = " ".join(help_text.split()).replace("|", "\\|")
        rows.append(f"| {name} | {help_text} |")
    return rows


def _walk(cmd: Any, path: list[str], level: int, out: list[str]) -> None:
    if getattr(cmd, "hidden", False):
        return
    out.append(f"{'#' * level} `{' '.join(path)}`\n")
    doc = (cmd.help or cmd.short_help or "").strip()
    if doc:
        out.append(" ".join(doc.split()) + "\n")
    if hasattr(cmd, "commands"):
        for name in sorted(cmd.commands):
            _walk(cmd.commands[name], [*path, name], min(level + 1, 4), out)
        return
    out.append(f"```\n{_usage(cmd, path)}\n```\n")
    rows = _params(cmd)
    if rows:
        out.extend(["| argument / option | meaning |", "|---|---|", *rows, ""])


def cli_reference() -> str:
    """The reference as markdown, from the live command tree."""
    from contextfork.cli.app import app

    root = typer.main.get_command(app)
    out: list[str] = []
    for name in sorted(root.commands):
        _walk(root.commands[name], ["contextfork", name], 2, out)
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
