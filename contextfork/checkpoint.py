"""The checkpoint a compaction or a fork must not lose: the transcript folded, a package exported.

``fold_and_export`` folds every step of the transcript into the session's cold store (exact
bytes, verified later) and exports a package seeded from the same transcript
(``transcript_seed``). The hooks' PreCompact, ``fork`` (Claude Code and Codex) and
``fork --role`` call it; the MCP export tool and the demo seed with ``transcript_seed``. It sits
above ``cold`` and ``package`` and below ``harness`` and ``slice``, which both use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfork import layout
from contextfork.errors import ContextforkError
from contextfork.hashing import sha256_file

if TYPE_CHECKING:
    from contextfork.transcript.model import Session


def transcript_seed(
    root: Path, transcript: Path | None, session_id: str | None, harness: str,
    session: Session | None = None,
) -> dict[str, Any]:
    """The export seed (telemetry, failed commands, goals), plus the transcript reference.
    ``session``: the caller's parse of ``transcript``, with its subagents, not read again.

    Seeding enriches the handoff; when the transcript cannot be read (corrupt, foreign) the
    package is still exported with the machine-known parts only: a compaction must not lose
    its checkpoint to a bad line.
    """
    seed: dict[str, Any] = {}
    if transcript is not None and transcript.is_file():
        try:
            from contextfork.package.seeding import seed_from_transcript, seed_session

            seed = dict((seed_session(session) if session is not None
                         else seed_from_transcript(transcript, root)) or {})  # fmt: skip
        except ContextforkError:
            seed = {}
        if not seed.get("transcript"):
            digest, size = sha256_file(transcript)
            seed["transcript"] = {
                "path": str(transcript),
                "sha256": digest,
                "size": size,
                "format": harness,
            }
    if session_id and not seed.get("session_id"):
        seed["session_id"] = session_id
    seed.setdefault("harness", harness)
    return seed


def fold_and_export(
    root: Path,
    transcript: Path | None,
    session_id: str | None,
    harness: str,
    trigger: str,
    goal: str | None = None,
    session: Session | None = None,
    release: bool = False,
) -> dict[str, Any]:
    """Fold the whole transcript into the session's cold store, then export a package.
    ``session``: the caller's parse of the transcript, without subagents (fold reads no more).
    ``release``: ``session`` is the caller's own, with its subagents, and the caller is done
    with its steps' blocks: the export's seed is taken from it first, then the fold lets each
    step's blocks go once its node is built (``fork``: issue 27)."""
    seed = (transcript_seed(root, transcript, session_id, harness, session=session)
            if release and session is not None else None)  # fmt: skip
    from contextfork.package.api import export_package
    from contextfork.package.export import ExportOptions

    info: dict[str, Any] = {}
    refs: list[str] = []
    if transcript is not None and transcript.is_file() and session_id:
        from contextfork.cold import api as cold_api

        try:
            res = cold_api.fold_session(transcript, repo=root, session=session_id,
                                        loaded=session, release=seed is not None)
        except ContextforkError as err:
            # The package is the checkpoint the compaction must not lose: export it anyway.
            info["fold_error"] = f"{type(err).__name__}: {err.one_line()}"
        else:
            info["folded_steps"] = res.data["steps"]
            info["written"] = res.data["written"]
            info["store"] = res.data["store"]
            refs.append(layout.cold_store_rel(session_id))
    opts = ExportOptions(
        trigger=trigger,
        session_id=session_id,
        transcript=transcript,
        harness=harness,
        goal=goal,
        seed=seed if seed is not None else transcript_seed(root, transcript, session_id, harness),
        cold_store_refs=refs,
    )
    pkg = export_package(root, opts)
    info["package_id"] = pkg.data["package_id"]
    info["package_path"] = pkg.data["path"]
    return info
