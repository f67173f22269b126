"""Render a ``Result`` as text or as the JSON envelope, without Typer (used by fast paths too)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from contextfork.envelope import Result, dumps, envelope, error_envelope
from contextfork.errors import ContextforkError


def render(result: Result, as_json: bool, human: Callable[[Result], None] | None = None) -> int:
    if as_json:
        print(dumps(envelope(result)))
    else:
        if human is not None:
            human(result)
        elif result.text is not None:
            print(result.text, end="" if result.text.endswith("\n") else "\n")
        for p in result.problems:
            stream = sys.stderr if p.severity == "error" else sys.stdout
            print(p.line(), file=stream)
    return result.exit_code


def render_error(command: str, err: ContextforkError, as_json: bool) -> int:
    if as_json:
        print(
            dumps(error_envelope(command, type(err).__name__, err.one_line(), int(err.exit_code)))
        )
    else:
        print(f"contextfork {command}: error: {err.one_line()}", file=sys.stderr)
    return int(err.exit_code)
