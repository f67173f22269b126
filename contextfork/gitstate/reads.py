"""An export's git questions about the work tree: status first, then the diff of what it listed.

A pre-commit checkpoint is a cold process: the interpreter and the export's modules took about
as long as ``git status`` on a 5,000-file repository. Status starts first, before the
export's own imports (``gitstate.early``: the hook starts it before importing anything else),
and the work-tree patch (``git diff HEAD``) follows it, naming only the paths status listed:
the whole-tree ``diff HEAD`` stat'ed and compared every tracked file a second time beside
status (~17 ms of CPU on 5,000 files, issue 27). The patch is the same bytes: a path status
does not list is the same in HEAD, the index and the work tree, so it has no section.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextfork.gitstate.core import start
from contextfork.gitstate.early import SPAWN, EarlyReads
from contextfork.gitstate.pipes import Drained, drain
from contextfork.gitstate.porcelain import Status, status_args
from contextfork.gitstate.staged import can_name
from contextfork.gitstate.trees import diff_args

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Protocol

    class Reading(Protocol):
        """A started git question: ``pipes.Drained``, or ``early.Spawned``."""

        def finish(self, what: str) -> bytes: ...

        def discard(self) -> None: ...

    class Reads(Protocol):
        """Status, started: ``early.EarlyReads`` (or ``ExportReads`` without posix_spawn)."""

        @property
        def status(self) -> Reading: ...

        def discard(self) -> None: ...


class ExportReads:
    """``git status`` running, its output collected as it comes (no posix_spawn here)."""

    def __init__(self, status: Drained) -> None:
        self.status = status

    def discard(self) -> None:
        self.status.discard()


def start_export_reads(root: Path, gdir: Path) -> Reads:
    """Start status for the work tree at ``root``, as the hook's early start does."""
    if SPAWN:
        return EarlyReads(os.path.realpath(root), os.path.realpath(gdir))
    return ExportReads(drain(start(root, status_args())))


def start_worktree_diff(root: Path, st: Status) -> Drained | None:
    """``git diff HEAD`` (exact binary patch) of the tracked paths ``st`` listed, both names of
    a rename, taken literally; None when it listed none (the patch is empty). Too many names
    for one command line: the whole-tree diff."""
    names: list[bytes] = []
    for e in st.entries:
        names.append(e.raw_path)
        if e.raw_orig is not None:
            names.append(e.raw_orig)
    if not names:
        return None
    if not can_name(names):
        return drain(start(root, diff_args("HEAD")))
    args = [*diff_args("HEAD"), "--", *(n.decode("utf-8", "surrogateescape") for n in names)]
    return drain(start(root, args, env={"GIT_LITERAL_PATHSPECS": "1"}))
