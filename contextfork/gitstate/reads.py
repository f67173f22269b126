"""The first two git questions of an export, started before the export's own imports.

A pre-commit checkpoint is a cold process: the interpreter and the export's modules took about
as long as ``git status`` and ``git diff HEAD`` on a 5,000-file repository, one after the
other. The hook (``lifecycle.githooks``) starts both here, right after it has found the
repository, then imports the export while git works on the other core (issue 27);
``package.export`` starts them itself when nobody did. Same questions, same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextfork.gitstate.core import start
from contextfork.gitstate.early import index_is_stale
from contextfork.gitstate.pipes import Drained, drain
from contextfork.gitstate.porcelain import status_args
from contextfork.gitstate.trees import diff_args


class Reading(Protocol):
    """A started git question: ``pipes.Drained``, or ``early.Spawned`` from the hook's start."""

    def finish(self, what: str) -> bytes: ...

    def discard(self) -> None: ...


class Reads(Protocol):
    """Status and the diff against HEAD, started: ``ExportReads`` or ``early.EarlyReads``."""

    @property
    def status(self) -> Reading: ...

    @property
    def diff(self) -> Reading: ...

    def discard(self) -> None: ...


@dataclass
class ExportReads:
    """``git status`` and ``git diff HEAD`` running, their output collected as it comes."""

    status: Drained
    diff: Drained

    def discard(self) -> None:
        self.status.discard()
        self.diff.discard()


def start_export_reads(root: Path, gdir: Path) -> ExportReads:
    """Start status, then the worktree diff against HEAD (an unborn HEAD: export redoes it).

    A copied repository (every index entry's stat data stale): status re-hashes the tracked
    files and writes the refreshed index; the diff starts after it instead of hashing them all
    a second time beside it. Asked before status starts: a fast status may have refreshed the
    index already by the time it is read."""
    stale = index_is_stale(root, gdir)
    d_status = drain(start(root, status_args()))
    if stale:
        try:
            d_status.finish("status")
        except BaseException:
            d_status.discard()
            raise
    return ExportReads(d_status, drain(start(root, diff_args("HEAD"))))
