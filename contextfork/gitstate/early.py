"""The pre-commit checkpoint's first git questions, started before the hook imports the rest.

A cold checkpoint spent its first ~45 ms importing (subprocess, dataclasses, gitstate, the
export) before ``git status`` and ``git diff HEAD`` started, and those two are most of git's
part. The hook entry (``lifecycle.gitrun``) starts them here, with the standard library's
``os``, ``struct`` and ``threading`` only, in the directory git runs hooks from (the top of the
work tree), then imports everything else while git works on the other core (issue 27). Threads
read each process's output from the start: a large patch would otherwise fill the pipe and
stall git until the export came to read it. ``package.export`` takes them as it takes
``gitstate.start_export_reads``: same questions, same arguments (``argv``), same order.

``start_reads`` declines (None: the export starts them itself) where ``.git`` here is not a
directory (a linked worktree, a submodule) or the index looks copied (``index_is_stale``: then
status must refresh it before the diff starts, which the export orders).
"""

from __future__ import annotations

import os
import struct
import threading

from contextfork.gitstate.argv import DIFF_OPTIONS, PINNED, STATUS, git_env

_SPAWN = hasattr(os, "posix_spawnp")  # not on Windows: the export starts git there
_DEVNULL_IN = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)] if _SPAWN else []


class Spawned:
    """One git process, its stdout and stderr collected by two threads as git writes them."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions = [*_DEVNULL_IN, (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        try:
            self.pid = os.posix_spawnp("git", ["git", *PINNED, *args], env, file_actions=actions)
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
    """``git status`` and ``git diff HEAD`` running for the work tree at ``top``."""

    def __init__(self, top: str, gdir: str) -> None:
        self.top, self.git_dir = top, gdir
        env = git_env()
        self.status = Spawned(list(STATUS), env)
        try:
            self.diff = Spawned(["diff", "HEAD", *DIFF_OPTIONS], env)
        except BaseException:
            self.status.discard()
            raise

    def discard(self) -> None:
        self.status.discard()
        self.diff.discard()


def start_reads() -> EarlyReads | None:
    """Start status and the diff against HEAD here (the top of the work tree, as git runs a
    hook); None where the export must start them itself (see the module doc)."""
    top = os.path.realpath(os.getcwd())
    gdir = os.path.join(top, ".git")
    if not _SPAWN or not os.path.isdir(gdir) or index_is_stale(top, gdir):
        return None
    try:
        return EarlyReads(top, gdir)
    except OSError:  # no git on PATH, no fork: the export's own start reports it
        return None


_M32 = 0xFFFFFFFF


def index_is_stale(root: str | os.PathLike[str], gdir: str | os.PathLike[str], sample: int = 8) -> bool:
    """Does the index's stat data belong to other files (a repository copied with ``cp -r``)?

    Then every tracked file is stat-dirty, and ``git status`` and ``git diff`` started side by
    side would each re-read and hash the whole tree. The first ``sample`` regular-file entries
    are compared with ``lstat`` (inode, ctime, mtime, size): most differing means stale. A
    format this does not read (e.g. SHA-256 object ids) gives no evidence: False.
    """
    try:
        with open(os.path.join(gdir, "index"), "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return False
    if len(data) < 12 or data[:4] != b"DIRC":
        return False
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return False
    base = os.fsencode(root)
    pos, prev, seen, dirty = 12, b"", 0, 0
    for _ in range(min(count, 64)):
        if pos + 62 > len(data):
            break
        ctime, _cns, mtime, _mns, _dev, ino, mode, _uid, _gid, size = struct.unpack_from(">10I", data, pos)
        (flags,) = struct.unpack_from(">H", data, pos + 60)
        at = pos + 62 + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:  # the name is the previous one less ``strip`` bytes, plus a suffix
            if at >= len(data):
                break
            byte, at = data[at], at + 1
            strip = byte & 0x7F
            while byte & 0x80 and at < len(data):  # git's offset varint (varint.c)
                byte, at = data[at], at + 1
                strip = ((strip + 1) << 7) | (byte & 0x7F)
            end = data.find(b"\0", at)
            if end < 0:
                break
            name = prev[: max(0, len(prev) - strip)] + data[at:end]
            nxt = end + 1
        else:
            end = data.find(b"\0", at)
            if end < 0:
                break
            name = data[at:end]
            nxt = pos + ((at - pos + len(name) + 8) & ~7)
        pos, prev = nxt, name
        if mode & 0o170000 != 0o100000:
            continue
        try:
            st = os.lstat(os.path.join(base, name))
        except OSError:
            continue
        seen += 1
        dirty += (ino, ctime, mtime, size) != (
            st.st_ino & _M32, int(st.st_ctime) & _M32, int(st.st_mtime) & _M32, st.st_size & _M32,
        )  # fmt: skip
        if seen >= sample:
            break
    return seen > 0 and dirty * 2 > seen
