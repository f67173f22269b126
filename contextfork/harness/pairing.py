"""Which package a starting session should be offered (SessionStart at startup / resume / clear).

A package is made for someone. ``contextfork fork`` records fork session → package in
``.contextfork/harness/forks/<fork>.json``; a PreCompact export belongs to the session that
compacted (it gets it back through the compaction brief). Such a package is offered to that
session, to a resume of it, or to a Claude Code ``--fork-session`` copy of it (its lines name the
session in ``forkedFrom``) — and to nobody else, so parallel forks and a Codex session started
in the same repository no longer take each other's packages. Only a package no session claims
(a manual export, a checkpoint, a pulled package) is offered to a new session, with a line that
says it was not made for it. Nothing is offered that this user did not export, pull or trust
here (``contextfork.provenance``): files a repository commits under ``.contextfork/`` never are.

Stdlib only, and cheap when there is nothing to offer: SessionStart runs at every start, so
the common case (no packages, or all of them claimed or consumed) must not load pydantic or
validate anything. Validation happens once a package is actually offered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from contextfork import layout, provenance
from contextfork.errors import UnsafeStateDir
from contextfork.transcript.origin import forked_from

# A package exported by these triggers belongs to the session named in its metadata.
CLAIMING_TRIGGERS = frozenset({"fork", "pre-compact"})


class Offer(NamedTuple):
    package_id: str
    path: Path
    paired: bool  # made for this session (or its lineage) rather than unclaimed
    made_for: str | None = None  # the session it belongs to, when paired
    from_session: str | None = None  # the session that exported it
    applied_here: bool = False  # restored into this checkout by `resume --apply` in a shell


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _checked(where: Callable[[Path], Path], root: Path) -> Path | None:
    """``where(root)`` when every existing component is a real directory, else None
    (a committed symlink must not make us read, or offer, files from outside the repo)."""
    try:
        return where(root)
    except UnsafeStateDir:  # nothing to offer from there
        return None


def _packages(root: Path) -> list[tuple[str, Path]]:
    base = _checked(layout.packages_dir, root)
    if base is None:
        return []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    return sorted(
        (e.name, Path(e.path))
        for e in entries
        if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
    )


def _vouched(root: Path, pid: str, path: Path) -> bool:
    """Exported, pulled or trusted here and unchanged since; with
    ``contextfork.requireSignedPackages`` a foreign one only with a verified signature."""
    st = provenance.standing(root, pid, path)
    if not st.offered or st.record is None:
        return False
    if not provenance.is_foreign(st.record):
        return True
    from contextfork import signing  # lazy: git runs only for a package not made here

    return signing.unsigned_refusal(root, st) is None


def _consumptions(pkg: Path) -> list[dict[str, Any]]:
    state = _json(pkg.parent / f"{pkg.name}.state.json")
    items = state.get("consumptions") if isinstance(state, dict) else None
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def shell_apply(c: dict[str, Any]) -> bool:
    """A ``resume --apply`` run by no session (a shell): it restored the files, but no session
    read the brief, so it does not use the package up."""
    return bool(c.get("applied")) and not c.get("session_id")


def consumers(pkg: Path) -> list[str | None]:
    """Session ids that received ``pkg`` (from its state file beside it; unreadable → none)."""
    out: list[str | None] = []
    for c in _consumptions(pkg):
        if shell_apply(c):
            continue
        sid = c.get("session_id")
        out.append(sid if isinstance(sid, str) else None)
    return out


def applied_here(pkg: Path) -> bool:
    """Applied in this checkout from a shell and not yet handed to any session."""
    items = _consumptions(pkg)
    return any(shell_apply(c) for c in items) and not consumers(pkg)


def fork_record(root: Path, session_id: str) -> dict[str, Any] | None:
    try:
        data = _json(layout.fork_record(root, session_id))
    except Exception:  # noqa: BLE001 - a hostile id is simply no record
        return None
    return data if isinstance(data, dict) else None


def lineage(root: Path, session_id: str, transcript: Path | None) -> list[str]:
    """This session, then the session it was copied from (a resume keeps the id itself)."""
    out = [session_id]
    parent = forked_from(transcript)
    if parent and parent not in out and fork_record(root, session_id) is None:
        out.append(parent)
    return out


def owner(pkg: Path) -> tuple[str | None, str | None]:
    """(session the package belongs to, session that exported it) from its metadata."""
    meta = _json(pkg / "session_metadata.json")
    if not isinstance(meta, dict):
        return None, None
    parent = meta.get("parent_session_id")
    parent = parent if isinstance(parent, str) and parent else None
    return (parent if meta.get("trigger") in CLAIMING_TRIGGERS else None), parent


def choose(root: Path, session_id: str | None, transcript: Path | None) -> Offer | None:
    """The package to offer this starting session, or None (nothing to do: the fast path)."""
    packages = _packages(root)
    if not packages:
        return None
    by_id = dict(packages)
    line = lineage(root, session_id, transcript) if session_id else []
    for sid in line:
        record = fork_record(root, sid)
        pid = record.get("package_id") if record else None
        if isinstance(pid, str) and pid in by_id and _vouched(root, pid, by_id[pid]):
            if session_id in consumers(by_id[pid]):
                return None  # already handed to this session
            return Offer(pid, by_id[pid], True, made_for=sid)
    claimed = {
        str(r.get("package_id"))
        for r in (_json(p) for p in _fork_records(root))
        if isinstance(r, dict)
    }
    parents = line[1:]
    for pid, path in reversed(packages):  # quick start C: pulled, `resume --apply`, new session
        if applied_here(path) and _vouched(root, pid, path):
            return Offer(pid, path, False, from_session=owner(path)[1], applied_here=True)
    for pid, path in reversed(packages):  # a copy of session X gets X's own latest export
        if parents and pid not in claimed and owner(path)[0] in parents and _vouched(root, pid, path):
            if session_id in consumers(path):
                return None
            return Offer(pid, path, True, made_for=owner(path)[0])
    for pid, path in reversed(packages):
        if pid in claimed or consumers(path):
            continue
        belongs, exported_by = owner(path)
        if belongs is not None:
            continue  # made for another session's continuation
        if session_id and exported_by == session_id:
            continue  # this session's own export
        if not _vouched(root, pid, path):
            continue  # not exported, pulled or trusted here (a repository's own files)
        return Offer(pid, path, False, from_session=exported_by)
    return None


def _fork_records(root: Path) -> list[Path]:
    base = _checked(layout.fork_records_dir, root)
    if base is None:
        return []
    try:
        return [Path(e.path) for e in os.scandir(base) if e.name.endswith(".json")]
    except OSError:
        return []
