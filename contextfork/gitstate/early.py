"""The pre-commit checkpoint's first git question, started before the hook imports the rest.

A cold checkpoint spent its first ~45 ms importing (subprocess, dataclasses, gitstate, the
export) before ``git status`` started. The hook entry (``lifecycle.gitrun``) starts it here,
with the standard library's ``os`` and ``threading`` only, for the directory git runs hooks
from (the top of the work tree), then imports everything else while git works on the other core
(issue 27). Threads read the output from the start, so git never waits on a full pipe.
``gitstate.reads.start_export_reads`` starts status the same way for every export (one path);
the work-tree diff follows status and names only the paths it listed (``reads``).

``start_reads`` declines (None: the export starts status itself) where ``.git`` here is not a
directory (a linked worktree, a submodule).
"""

from __future__ import annotations

import os
import threading

from contextfork.gitstate.argv import PINNED, STATUS, git_env

#: posix_spawn is there (not on Windows: ``reads`` starts git through subprocess there).
SPAWN = hasattr(os, "posix_spawnp")
_DEVNULL_IN = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)] if SPAWN else []


class Spawned:
    """One git process (in ``top``), its stdout and stderr collected by two threads as git
    writes them."""

    def __init__(self, top: str, args: list[str], env: dict[str, str]) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions = [*_DEVNULL_IN, (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        try:
            self.pid = os.posix_spawnp("git", ["git", "-C", top, *PINNED, *args], env, file_actions=actions)
        finally:
            os.close(out_w)
            os.close(err_w)
        self.returncode: int | None = None
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        self._readers = [threading.Thread(target=_drain, args=(fd, buf), daemon=True)
                         for fd, buf in ((out_r, self._out), (err_r, self._err))]  # fmt: skip
        for t in self._readers:
            t.start()

    def _wait(self) -> int:
        for t in self._readers:
            t.join()
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def finish(self, what: str) -> bytes:
        """The whole stdout once git has exited; GitError (git's first line) when it failed."""
        if self._wait() != 0:
            from contextfork.errors import GitError

            lines = [ln for ln in b"".join(self._err).decode("utf-8", "replace").splitlines() if ln.strip()]
            raise GitError(f"git {what} failed: {lines[0].strip() if lines else 'unknown error'}")
        return b"".join(self._out)

    def discard(self) -> None:
        """Stop git (if still running) and wait for it and its readers."""
        if self.returncode is None:
            try:  # noqa: SIM105 - contextlib is one more import on the hook's first path
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
        self._wait()


def _drain(fd: int, into: list[bytes]) -> None:
    try:
        while chunk := os.read(fd, 1 << 16):
            into.append(chunk)
    finally:
        os.close(fd)


class EarlyReads:
    """``git status`` running for the work tree at ``top``."""

    def __init__(self, top: str, gdir: str) -> None:
        self.top, self.git_dir = top, gdir
        self.status = Spawned(top, list(STATUS), git_env())

    def discard(self) -> None:
        self.status.discard()


def start_reads() -> EarlyReads | None:
    """Start status here (the top of the work tree, as git runs a hook); None where the export
    must start it itself (see the module doc)."""
    top = os.path.realpath(os.getcwd())
    gdir = os.path.join(top, ".git")
    if not SPAWN or not os.path.isdir(gdir):
        return None
    try:
        return EarlyReads(top, gdir)
    except OSError:  # no git on PATH, no fork: the export's own start reports it
        return None
