"""`contextfork context VERB`: the agent's curation verbs from a shell (thin: parse, call
contextfork.curate.api.run_verb, emit). The same verbs are the pi tool and the MCP tool
``contextfork_context``; ``--args JSON`` passes the tool's argument object as is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded, repo_root
from contextfork.curate.args import VERBS
from contextfork.errors import UsageError

VERB_HELP = " | ".join(VERBS)


def _span(value: str) -> list[int]:
    m = re.fullmatch(r"\s*(\d+)\s*(?:[-–]\s*(\d+)\s*)?", value)
    if not m:
        raise UsageError(f"--steps must be N or FIRST-LAST, got {value!r}")
    first = int(m.group(1))
    return [first, int(m.group(2) or first)]


def _args_json(raw: str) -> dict[str, object]:
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise UsageError("--args must be a JSON object")
    return obj


def context_cmd(
    verb: Annotated[str, typer.Argument(help=VERB_HELP)],
    step: Annotated[int | None, typer.Option("--step", help="Cold step id.")] = None,
    steps: Annotated[str | None, typer.Option("--steps", help="A span FIRST-LAST.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Stable step key.")] = None,
    text: Annotated[str | None, typer.Option("--text", help="brief: the agent's words.")] = None,
    offset: Annotated[int | None, typer.Option("--offset", help="peek: byte offset.")] = None,
    max_chars: Annotated[int | None, typer.Option("--max-chars", help="peek: at most this many characters.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="peek: at most this many o200k tokens.")] = None,
    view: Annotated[str | None, typer.Option("--view", help="peek: raw | readable.")] = None,
    record: Annotated[bool, typer.Option("--record", help="peek: record it (as expand).")] = False,
    kind: Annotated[str | None, typer.Option("--kind", help="unmark: all|pin|expand|brief|boundary.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="reboundary: back to automatic.")] = False,
    transcript: Annotated[Path | None, typer.Option("--transcript", help="status: also render it and list the folds of that view.")] = None,
    policy: Annotated[str | None, typer.Option("--policy", help="status with --transcript: epoch | refold.")] = None,
    k: Annotated[int | None, typer.Option("--k", help="status with --transcript: boundary period.")] = None,
    args: Annotated[str | None, typer.Option("--args", help="The verb's arguments as one JSON object.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id (default: $CONTEXTFORK_SESSION, else 'default').")] = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run one curation verb on a session's folds (decisions are durable and verified)."""
    from contextfork.cold.layout import default_session
    from contextfork.curate.api import run_verb

    given: dict[str, object] = _args_json(args) if args is not None else {}
    flags: dict[str, object | None] = {
        "step": step, "steps": _span(steps) if steps is not None else None, "key": key,
        "text": text, "offset": offset, "max_chars": max_chars, "max_tokens": max_tokens, "view": view,
        "record": True if record else None, "kind": kind, "clear": True if clear else None,
        "transcript": str(transcript) if transcript is not None else None, "policy": policy,
        "k": k,
    }
    for name, value in flags.items():
        if value is not None:
            if name in given:
                raise UsageError(f"{name} is given twice (--args and its own option)")
            given[name] = value
    emit(run_verb(repo_root(repo), default_session(session), verb, given), as_json)


def register(app: typer.Typer) -> None:
    app.command("context", help="The agent's curation verbs: " + VERB_HELP + ".")(
        guarded("context")(context_cmd)
    )

