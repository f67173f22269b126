"""Console entry point.

The status line and harness hooks run on every prompt, so they bypass Typer, pydantic and
jinja2 entirely: ``contextfork statusline`` and ``contextfork hooks run ...`` (and its legacy
alias ``contextfork hook ...``, which settings written by older versions still call) go straight
to their runners, which read their own arguments. Typer never parses those arguments (its
commands of the same names hand them on verbatim), so each command has one parser; every other
command is parsed by Typer alone (docs/design/cli-parsers.md).
"""

from __future__ import annotations

import os
import sys

#: Exit status when the reader of our stdout went away (``contextfork log | head``): what a Unix
#: tool killed by SIGPIPE reports in the shell (128 + 13), and nothing is printed.
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """The console script (``argv`` None: a warm command server runs it when one answers, see
    contextfork.server) and the in-process entry point (``argv`` given: always runs here)."""
    args = sys.argv[1:] if argv is None else argv
    if argv is None:
        from contextfork.server.client import serve

        served = serve(args)
        if served is not None:
            # Nothing of ours to finalise: the command ran in the server. Skipping the
            # interpreter's teardown is ~3 ms on every served command.
            for stream in (sys.stdout, sys.stderr):
                try:  # contextlib is not imported on this path
                    if stream is not None:  # None: the descriptor was closed when we started
                        stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(served & 0xFF)
    try:
        code = _dispatch(args)
        if sys.stdout is not None:  # started with stdout closed: print() wrote nothing, as usual
            sys.stdout.flush()  # a closed pipe shows up here when the output fit in the buffer
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("contextfork: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("CONTEXTFORK_DEBUG"):
            raise
        where = args[0] if args else "contextfork"
        print(
            f"contextfork {where}: internal error: {type(exc).__name__}: {exc} "
            "(set CONTEXTFORK_DEBUG=1 for a traceback and please report it)",
            file=sys.stderr,
        )
        return 1


def _hook_args(args: list[str]) -> list[str] | None:
    """The event arguments of ``hooks run <event>`` / legacy ``hook <event>``; None otherwise
    (and for ``--help``, which Typer renders)."""
    if args[:2] == ["hooks", "run"]:
        rest = args[2:]
    elif args[:1] == ["hook"]:
        rest = args[1:]
    else:
        return None
    return None if any(a in ("--help", "-h") for a in rest) else rest


def _dispatch(args: list[str]) -> int:
    if args and args[0] in ("--version", "-V"):
        from contextfork import __version__

        print(f"contextfork {__version__}")  # `hooks install` runs this to check the entry point
        return 0
    if args and args[0] == "statusline":
        from contextfork.telemetry.statusline import main as statusline_main

        return statusline_main(args[1:])
    hook_args = _hook_args(args)
    if hook_args is not None:
        from contextfork.harness.hooks.runner import main as hook_main

        return hook_main(hook_args)
    from contextfork.cli.app import run

    return run(args)
