"""Typer-free parsing for commands on git's hook path (``export``).

Typer's import and parameter machinery cost ~100 ms; a pre-commit checkpoint cannot afford it.
The Typer command in ``package_cmds`` stays the documented surface (and handles ``--help`` and
anything this parser does not recognise); both call ``package.api.export_from_options``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from contextfork.errors import ContextforkError
from contextfork.output import render, render_error


def export_main(args: list[str]) -> int | None:
    """Run ``export``; None means "not for me" (help, unknown option) and Typer takes over."""
    if any(a in ("-h", "--help") for a in args):
        return None
    p = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    p.add_argument("--goal")
    p.add_argument("--session")
    p.add_argument("--handoff", type=Path)
    p.add_argument("--transcript", type=Path)
    p.add_argument("--trigger", default="cli")
    p.add_argument("--file-cap", type=int, default=1 << 20)
    p.add_argument("--repo", type=Path)
    p.add_argument("--json", action="store_true")
    try:
        ns, extra = p.parse_known_args(args)
    except (argparse.ArgumentError, SystemExit):
        return None
    if extra:
        return None
    from contextfork.package.api import export_from_options

    try:
        result = export_from_options(
            ns.repo, goal=ns.goal, session=ns.session, handoff=ns.handoff,
            transcript=ns.transcript, trigger=ns.trigger, file_cap=ns.file_cap,
        )  # fmt: skip
    except ContextforkError as err:
        return render_error("export", err, ns.json)
    except OSError as err:
        return render_error(
            "export", ContextforkError(f"{err.strerror or err}: {err.filename or ''}"), ns.json
        )
    return render(result, ns.json)
