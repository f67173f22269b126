"""`contextfork fold …`: the cold store commands (thin: parse, call contextfork.cold.api, emit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded
from contextfork.errors import UsageError
from contextfork.inputfile import read_regular

SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="Session id (default: $CONTEXTFORK_SESSION, else 'default')."),
]
MAX_PAYLOAD = 64 * 1024 * 1024  # one step's bytes; /dev/zero on stdin must not eat memory

StepArg = Annotated[str, typer.Argument(help="Step id: 12 or step_000012.")]

fold_app = typer.Typer(
    name="fold",
    help="Lossless cold store of session steps (IPCF-1.1): fold, scan, recall, hydrate, evict.",
    no_args_is_help=True,
)


def _step(value: str) -> int:
    from contextfork.cold.api import parse_step

    return parse_step(value)


@fold_app.command("add")
@guarded("fold add")
def add_cmd(
    step: StepArg,
    summary: Annotated[str, typer.Argument(help="One-line summary of the step.")],
    file: Annotated[Path | None, typer.Option("--file", help="Payload file ('-' or omitted: stdin).")] = None,
    intent: Annotated[list[str] | None, typer.Option("--intent", help="Intent key this step owns (repeatable).")] = None,
    ref: Annotated[list[int] | None, typer.Option("--ref", help="Earlier step this one builds on (repeatable).")] = None,
    session: SessionOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fold one step's exact bytes into the cold store (refuses a different payload under a used id)."""
    from contextfork.cold import api

    if file is not None and str(file) != "-":
        payload = read_regular(file, "payload file", limit=MAX_PAYLOAD)
    elif sys.stdin is not None and (file is not None or not sys.stdin.isatty()):  # None: closed
        payload = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        if len(payload) > MAX_PAYLOAD:
            raise UsageError(f"payload on stdin larger than {MAX_PAYLOAD} bytes")
    else:
        raise UsageError("no payload", hint="pass --file F or pipe the step's bytes on stdin")
    emit(api.fold_step(_step(step), summary, payload, repo=repo, session=session,
                       intents=intent, refs=ref), as_json)


@fold_app.command("session")
@guarded("fold session")
def session_cmd(
    transcript: Annotated[Path, typer.Option("--transcript", help="Transcript file (any supported format).")],
    session: SessionOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fold every step of a transcript with a deterministic, model-free brief."""
    from contextfork.cold import api

    if as_json or not sys.stderr.isatty():
        emit(api.fold_session(transcript, repo=repo, session=session), as_json)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("folding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("fold", total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = api.fold_session(transcript, repo=repo, session=session, progress=tick)
    emit(result, as_json)


# A prompt or query may start with "-" ("-v flag broke the build"): unknown options are taken
# as text, so no `--` is needed (it still works).
_TEXT_ARG = {"ignore_unknown_options": True}


@fold_app.command("scan", context_settings=_TEXT_ARG)
@guarded("fold scan")
def scan_cmd(
    prompt: Annotated[str, typer.Argument(help="The user's prompt.")],
    context: Annotated[bool, typer.Option("--context", help="Print only the paged-in context blocks.")] = False,
    session: SessionOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Passive pre-turn page-in: start a new turn and page in the steps the prompt needs (RGSC)."""
    from contextfork.cold import api

    result = api.page_in(prompt, repo=repo, session=session, named_store_required=True)
    if context and not as_json:
        result.text = result.data["context"]
    emit(result, as_json)


@fold_app.command("recall", context_settings=_TEXT_ARG)
@guarded("fold recall")
def recall_cmd(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 10,
    session: SessionOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Which steps match, in coverage tiers, labelled latest / superseded / historical / related."""
    from contextfork.cold import api

    emit(api.recall(query, limit=limit, repo=repo, session=session), as_json)


@fold_app.command("hydrate")
@guarded("fold hydrate")
def hydrate_cmd(step: StepArg, session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Verified bytes of one step into the current turn, capped per call and per turn."""
    from contextfork.cold import api

    emit(api.page_in_step(_step(step), repo=repo, session=session), as_json)


@fold_app.command("evict")
@guarded("fold evict")
def evict_cmd(step: StepArg, session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Evict exactly one paged-in step from the current turn (logged; the cold bytes stay)."""
    from contextfork.cold import api

    emit(api.evict(_step(step), repo=repo, session=session), as_json)


@fold_app.command("show")
@guarded("fold show")
def show_cmd(step: StepArg, session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Developer view of one verified node (zero prompt cost, no turn state touched)."""
    from contextfork.cold import api

    emit(api.show(_step(step), repo=repo, session=session), as_json)


@fold_app.command("status")
@guarded("fold status")
def status_cmd(session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Nodes, tokens, bytes, the current turn's page-in, index freshness."""
    from contextfork.cold import api

    emit(api.status(repo=repo, session=session), as_json)


@fold_app.command("validate")
@guarded("fold validate")
def validate_cmd(session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Check every hash, the index, references and path containment (exit 3 on tamper)."""
    from contextfork.cold import api

    emit(api.validate(repo=repo, session=session), as_json)


@fold_app.command("index")
@guarded("fold index")
def index_cmd(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Discard the old index (even an unreadable one) and trust the node files as they are.")] = False,
    session: SessionOpt = None, repo: RepoOpt = None, as_json: JsonOpt = False,
) -> None:  # fmt: skip
    """Rebuild index.sqlite3 from the verified node files and rewrite recall_index.json."""
    from contextfork.cold import api

    emit(api.rebuild_index(repo=repo, session=session, discard_old=rebuild), as_json)


RemoteArg = Annotated[str, typer.Argument(help="Git remote.")]
ShareSessionOpt = Annotated[
    list[str] | None,
    typer.Option("--session", help="Session to share (repeatable; default: every session)."),
]


@fold_app.command("push")
@guarded("fold push")
def push_cmd(remote: RemoteArg = "origin", session: ShareSessionOpt = None, repo: RepoOpt = None,
             as_json: JsonOpt = False) -> None:  # fmt: skip
    """Send cold sessions as git commits under refs/contextfork/cold/<session> (verified and
    scanned for secrets first; fast-forward only: pull first when the remote moved on)."""
    from contextfork.cli.common import repo_root
    from contextfork.cold import share

    emit(share.push(repo_root(repo), remote, session), as_json)


@fold_app.command("pull")
@guarded("fold pull")
def pull_cmd(remote: RemoteArg = "origin", session: ShareSessionOpt = None, repo: RepoOpt = None,
             as_json: JsonOpt = False) -> None:  # fmt: skip
    """Fetch cold sessions, verify every node, then publish them into the local store
    (exit 3 on a hostile tree, a tampered node or a conflicting step; nothing written then)."""
    from contextfork.cli.common import repo_root
    from contextfork.cold import share

    emit(share.pull(repo_root(repo), remote, session), as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(fold_app, name="fold")
