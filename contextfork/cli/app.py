"""The Typer application: the one definition of every command's arguments.

Each area registers its commands from its own module (``register(app)``); command bodies import
their domain modules lazily. A process runs one command, so ``run`` builds an app holding only
the area that defines it (``AREAS`` says which): Typer turns every registered function into a
click command on each call, and registering all areas cost ~20 ms more before anything ran.
Help, an unknown command or no command at all get the whole app (``build()``), which is also
what ``app`` is for the docs generator and tests.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer

# Area module -> the top-level commands and groups it registers (a test checks this table
# against what each module really registers).
AREAS: dict[str, tuple[str, ...]] = {
    "package_cmds": ("export", "validate", "demo"),
    "status_cmds": ("status", "statusline", "policy"),
    "fold_cmds": ("fold",),
    "render_cmds": ("render", "replay"),
    "lifecycle_cmds": ("resume", "log", "push", "pull", "packages"),
    "hooks_cmds": ("git-hook", "hooks", "hook"),
    "harness_cmds": ("fork", "mcp", "pi-worker"),
    "view_cmds": ("view",),
    "doctor_cmds": ("doctor",),
    "context_cmds": ("context",),
    "server_cmds": ("server",),
    "slice_cmds": ("slice",),
    "proxy_cmds": ("proxy", "run"),
}
_AREA_OF = {command: area for area, commands in AREAS.items() for command in commands}


def _root() -> typer.Typer:
    app = typer.Typer(
        name="contextfork",
        help="See, fold, render and fork long AI coding-agent sessions without losing anything.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _group() -> None:
        # Always a group, even when it holds one area with one command (Typer would otherwise
        # run that command without its name, and ``contextfork doctor`` would parse ``doctor``
        # as an argument).
        pass

    return app


def build(areas: tuple[str, ...] | None = None) -> typer.Typer:
    """The app with ``areas`` registered (default: all of them, in ``AREAS`` order)."""
    app = _root()
    for name in areas or tuple(AREAS):
        importlib.import_module(f"contextfork.cli.{name}").register(app)
    return app


def _area(args: list[str]) -> str | None:
    """The area whose command ``args`` name (None: the whole app, e.g. for ``--help``)."""
    return _AREA_OF.get(args[0]) if args else None


def app_for(args: list[str]) -> typer.Typer:
    """The smallest app that runs ``args`` exactly as the whole app would."""
    area = _area(args)
    return build((area,) if area else None)


_COMMANDS: dict[str | None, Any] = {}


def _command(area: str | None) -> Any:
    """The click command of one area's app (None: the whole app), built once per process:
    Typer rebuilds it on every call (~10 ms), which a warm server (contextfork.server) would
    pay per command."""
    if area not in _COMMANDS:
        _COMMANDS[area] = typer.main.get_command(build((area,) if area else None))
    return _COMMANDS[area]


def command_for(args: list[str]) -> Any:
    """The click command of ``app_for(args)``."""
    return _command(_area(args))


def warm() -> None:
    """Build every area's command now (the command server, before it forks)."""
    for area in (*AREAS, None):
        _command(area)


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, built on first use (docs generator, in-process tests)
        whole = build()
        globals()["app"] = whole
        return whole
    raise AttributeError(name)


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
        rv = command_for(args)(args=args, prog_name="contextfork", standalone_mode=False)
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
