"""Shared CLI plumbing: options, error handling, and rendering of ``Result`` objects.

Command modules stay thin: parse arguments, call one domain function, hand its ``Result`` to
``emit``. Domain modules never import this file (they know nothing of Typer).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer

from contextfork.envelope import Result
from contextfork.errors import ContextforkError, ExitCode
from contextfork.layout import repo_root  # the one repo discovery, for every command
from contextfork.output import render, render_error

P = ParamSpec("P")
T = TypeVar("T")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a versioned JSON envelope.")]
RepoOpt = Annotated[
    Path | None,
    typer.Option("--repo", help="Repository (default: the git root of the current directory)."),
]


class PipeClosed(Exception):
    """The reader of stdout went away; ``cli.app.run`` turns it into a silent exit 141."""


def _wants_json(kwargs: dict[str, Any]) -> bool:
    """The parsed ``--json`` option (named ``json`` or ``as_json``), not ``sys.argv``.

    Reading argv broke in-process calls (CliRunner, the docs generator) and misread a
    ``--json`` that was an option's value.
    """
    return bool(kwargs.get("as_json", kwargs.get("json", False)))


def fail(command: str, err: ContextforkError, as_json: bool = False) -> None:
    """Print one line (or a JSON envelope) and exit with the error's code."""
    raise typer.Exit(render_error(command, err, as_json))


def guarded(command: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Turn ContextforkError (and stray OSError) into one clear line and a named exit code."""

    def deco(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return fn(*args, **kwargs)
            except ContextforkError as err:
                fail(command, err, _wants_json(kwargs))
            except KeyboardInterrupt:
                print(f"contextfork {command}: interrupted", file=sys.stderr)
                raise typer.Exit(130) from None
            except BrokenPipeError:
                raise PipeClosed from None  # not an OSError, so click does not exit 1 on it
            except OSError as err:
                generic = ContextforkError(f"{err.strerror or err}: {err.filename or ''}".strip())
                fail(command, generic, _wants_json(kwargs))
            raise AssertionError("unreachable")  # pragma: no cover

        return wrapper

    return deco


def emit(result: Result, as_json: bool, human: Callable[[Result], None] | None = None) -> None:
    """Render a result and exit with its code."""
    code = render(result, as_json, human)
    if code:
        raise typer.Exit(code)


PIPED_WIDTH = 100


def console() -> Any:
    """A rich console for tables and progress bars (rich imported lazily).

    Its width is the terminal's (``COLUMNS`` wins, as in rich); when stdout is a pipe or a file
    and ``COLUMNS`` is unset, 100 rather than rich's 80, so piped output stays whole."""
    import os

    from rich.console import Console

    width = None
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = PIPED_WIDTH
    return Console(highlight=False, width=width)


def print_table(out: Any, table: Any) -> None:
    """Print a rich table whole: when it is wider than the console, its columns are split
    over several tables (each repeating the first, key column) instead of rich's default of
    squeezing every cell to ``14,040…``."""
    from rich.table import Table

    width = out.width
    wide = out.options.update_width(10_000)  # measured unconstrained: its natural width

    def natural(t: Any) -> int:
        return int(out.measure(t, options=wide).maximum)

    if natural(table) <= width:
        out.print(table)
        return
    cols = table.columns
    chunks: list[list[int]] = []
    for i in range(1, len(cols)):
        if chunks and natural(_sub(table, [0, *chunks[-1], i], Table)) <= width:
            chunks[-1].append(i)
        else:
            chunks.append([i])
    for n, chunk in enumerate(chunks):
        sub = _sub(table, [0, *chunk], Table)
        if n:
            sub.title = None
        out.print(sub)


def _sub(table: Any, keep: list[int], table_cls: Any) -> Any:
    """A copy of ``table`` with only the columns ``keep`` (same styles and rows)."""
    sub = table_cls(title=table.title, box=table.box, show_header=table.show_header)
    for i in keep:
        col = table.columns[i]
        sub.add_column(col.header, justify=col.justify, no_wrap=col.no_wrap,
                       overflow=col.overflow, style=col.style)  # fmt: skip
    cells = [list(table.columns[i].cells) for i in keep]
    for row in zip(*cells, strict=True):
        sub.add_row(*row)
    return sub


__all__ = [
    "ExitCode", "JsonOpt", "RepoOpt", "console", "emit", "fail", "guarded", "print_table",
    "repo_root",
]  # fmt: skip
