"""The Typer application. Each area registers its commands from its own module."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

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
    "doctor_cmds",
    "context_cmds",
)

for _name in _AREAS:
    importlib.import_module(f"contextfork.cli.{_name}").register(app)


def run(args: list[str]) -> int:
    """Run the CLI and return its exit code.

    click/Typer would render their own errors (unknown option, missing argument, bad value) as a
    multi-line rich box; SPEC §9 wants one line and exit 2 for every usage error, so the app runs
    with ``standalone_mode=False`` and this is the one place those errors are rendered.
    """
    exc = _click_exceptions()
    no_args = getattr(exc, "NoArgsIsHelpError", ())
    from contextfork.cli.common import PipeClosed

    was_devnull = _stdout_is_devnull()
    try:
        rv = app(args=args, prog_name="contextfork", standalone_mode=False)
    except PipeClosed:
        raise BrokenPipeError from None  # entry.main: silent, exit 141
    except SystemExit:
        # Typer's EPIPE handling (unguarded output) and rich's (help text) exit 1 after
        # wrapping stdout or pointing it at /dev/null: the same event as above.
        if type(sys.stdout).__name__ == "PacifyFlushWrapper" or (
            not was_devnull and _stdout_is_devnull()
        ):
            raise BrokenPipeError from None
        raise
    except no_args as err:
        print(err.ctx.get_help() if err.ctx is not None else "")
        return _usage_failure(err, "a command is missing", args)
    except exc.UsageError as err:
        return _usage_failure(err, err.format_message(), args)
    except typer.Abort:
        print("contextfork: aborted", file=sys.stderr)
        return 1
    except exc.ClickException as err:
        return _usage_failure(err, err.format_message(), args, code=err.exit_code)
    if isinstance(rv, int) and not isinstance(rv, bool):
        return rv
    return 0


def _stdout_is_devnull() -> bool:
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


def _click_exceptions() -> Any:
    """click's exception module: Typer >= 0.2x vendors click as ``typer._click``."""
    try:
        from typer._click import exceptions
    except ImportError:  # older Typer runs on the click package
        from click import exceptions  # type: ignore[no-redef]
    return exceptions


def _usage_failure(
    err: Any, message: str, args: list[str], code: int | None = None
) -> int:
    from contextfork.errors import ContextforkError, UsageError
    from contextfork.output import render_error

    ctx = getattr(err, "ctx", None)
    path = ctx.command_path if ctx is not None else "contextfork"
    command = path.split(" ", 1)[1] if " " in path else (args[0] if args else "contextfork")
    text = " ".join(message.split())
    one = UsageError(text, hint=f"see `{path} --help`")
    if code is not None and code != int(one.exit_code):
        generic = ContextforkError(text)
        return render_error(command, generic, "--json" in args) and code
    return render_error(command, one, "--json" in args)
