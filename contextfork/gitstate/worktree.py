"""The work tree's tree id (tracked + untracked, not ignored), as export and resume record it.

Export must not grow the user's object store (issue 27): ``add -A`` writes a blob for every
file it stages, and an untracked file too large for the package (200 MB of build output) added
its whole size to ``.git/objects`` on the first export, then cost a full re-hash on every later
one. So export's job

- stages what changed into a temporary index (a copy of the real one: its stat data is reused)
  with a temporary object directory in front of the real one (``GIT_OBJECT_DIRECTORY`` +
  ``GIT_ALTERNATE_OBJECT_DIRECTORIES``), thrown away afterwards. The names status listed are
  hashed, never written (``update-index --info-only``: a loose blob per changed file was most
  of a pre-commit checkpoint's git time), so only trees land there; the whole-tree walk
  (``paths=None``, resume and the fallback) stages with ``add -A``, blobs and trees alike;
- never reads the *held-out* files (untracked files the package does not capture) through
  ``add``: their blob ids come from ``update-index --info-only`` (hashed, never written) on a
  private index kept in the git dir, ``contextfork-held-index``, whose stat data makes git skip
  the re-hash of a file that has not changed (git's own racy-entry rules apply), and go into
  the temporary index by ``--index-info``; ``write-tree --missing-ok`` accepts them.

The tree id is the same as a whole-tree ``add -A``: git applies the same conversion
(``core.autocrlf``, ``.gitattributes``) either way. Resume and drift use ``worktree_tree_sha``:
it holds out the untracked files over 1 MiB the same way, but keeps the other objects, since
drift diffs that live tree afterwards (``diff-tree`` reads trees, never blobs).
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path

from contextfork import scratch
from contextfork.errors import GitError
from contextfork.gitstate.argv import PINNED as _PINNED
from contextfork.gitstate.core import _decode_err, common_dir, git_dir, git_env, run
from contextfork.gitstate.trees import remove_index, temp_index_path
from contextfork.testhooks import kill_point

HELD_INDEX = "contextfork-held-index"
_STAGE_NAMES = ["update-index", "--add", "--remove", "--replace", "--info-only", "-z", "--stdin"]


def _tmp_index(gdir: Path, src: Path | None = None) -> str:
    path = temp_index_path(gdir, "index")
    src = src or gdir / "index"
    if src.exists():
        # the copy keeps the index file's mtime: git's racy-entry check compares file mtimes with
        # it, and a fresh mtime would make a same-size edit in the same second look unchanged.
        scratch.copy_file(src, path)
    return path


class TreeJob:
    """The tree id of the whole working tree, computed by git in a background thread.

    ``paths``: the raw names whose work-tree side differs from the index plus the untracked
    ones, as status just listed them (``Status.worktree_paths``): only those are staged,
    literally and hashed without a blob (a name gone meanwhile leaves the tree). None: the whole
    tree, by ``add -A``. ``held``: untracked names hashed without being read by ``add`` or written
    (see the module doc). ``scratch``: new objects go to a throw-away directory in front of
    ``objects`` (the repository's object directory; asked of git when None).
    """

    def __init__(
        self, root: Path, gdir: Path, paths: list[bytes] | None, held: Iterable[bytes] = (),
        *, scratch: bool = True, objects: Path | None = None,
    ) -> None:  # fmt: skip
        self.root, self.gdir, self.scratch, self.objects = root, gdir, scratch, objects
        self.held = sorted(set(held))
        skip = set(self.held)
        self.paths = None if paths is None else [p for p in paths if p not in skip]
        self._proc: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self._sha: str | None = None
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def result(self) -> str:
        """The tree id; GitError (git's first line) when git refused, e.g. a name that became a
        directory without a commit (an empty nested repository) since status."""
        self._thread.join()
        if self._exc is not None:
            raise self._exc
        assert self._sha is not None
        return self._sha

    def cancel(self) -> None:
        """Stop the git at work (if any) and wait until the temporary files are gone."""
        with self._lock:
            self._cancelled = True
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
        self._thread.join()

    def _git(self, args: list[str], env: dict[str, str], data: bytes | None = None) -> bytes:
        with self._lock:
            if self._cancelled:
                raise GitError("git add -A / write-tree cancelled")
            proc = self._proc = subprocess.Popen(
                ["git", *_PINNED, *args], cwd=self.root, env=git_env(env),
                stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
        stdout, stderr = proc.communicate(data)
        if proc.returncode != 0:
            raise GitError(f"git {args[0]} (add -A / write-tree) failed: {_decode_err(stderr)}")
        return stdout

    def _work(self) -> None:
        idx = objs = None
        try:
            info = self._held_entries() if self.held else b""
            if not self.held and self.scratch:  # export, nothing held out: nothing to keep
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.gdir / HELD_INDEX)
            idx = _tmp_index(self.gdir)
            env = {"GIT_INDEX_FILE": idx}
            if self.scratch:
                objs = scratch.temp_dir(self.gdir, f"contextfork-objs-{os.getpid()}-")
                real = (self.objects or common_dir(self.root) / "objects").resolve()
                env |= {"GIT_OBJECT_DIRECTORY": objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(real)}
            if self.paths is None:  # the whole tree, less the held-out names
                add = ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"]
                spec = [b"."] + [b":(top,literal,exclude)" + p for p in self.held]
                self._git(add, env, b"\0".join(spec) + b"\0")
            elif self.paths:
                # The listed names only, hashed without writing a blob (``--info-only``, as for
                # the held-out ones): ``add`` wrote a loose object per changed file, most of this
                # job's time (a third of a pre-commit checkpoint). --remove: a name gone from the
                # work tree leaves the tree; --replace: a file where a directory was (or back).
                names = b"".join(p.rstrip(b"/") + b"\0" for p in self.paths)
                self._git(_STAGE_NAMES, env, names)
            if info:
                self._git(["update-index", "-z", "--index-info"], env, info)
            out = self._git(["write-tree", "--missing-ok"], env)
            self._sha = out.decode().strip().splitlines()[-1]
            kill_point("worktree:written")  # tests: a kill here leaves the temporaries behind
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in result()
            self._exc = exc
        finally:
            if idx is not None:
                remove_index(idx)
            if objs is not None:
                scratch.remove_dir(objs)

    def _held_entries(self) -> bytes:
        """``--index-info`` lines for the held-out names, from the private index (refreshed)."""
        keep = self.gdir / HELD_INDEX
        idx = _tmp_index(self.gdir, keep)
        try:
            env = {"GIT_INDEX_FILE": idx}
            names = b"\0".join(self.held) + b"\0"
            self._git(["update-index", "--add", "--remove", "--info-only", "-z", "--stdin"], env, names)
            listing = self._git(["ls-files", "-s", "-z"], env)
            wanted = set(self.held)
            lines, gone = [], []
            for rec in listing.split(b"\0"):
                name = rec.partition(b"\t")[2]
                if name in wanted:
                    lines.append(rec)
                elif name:
                    gone.append(name)
            if gone:  # names no longer held out (committed, deleted, now small): forgotten
                self._git(["update-index", "--force-remove", "-z", "--stdin"], env,
                          b"\0".join(gone) + b"\0")  # fmt: skip
            os.replace(idx, keep)  # git wrote it whole; two exports at once: the last one wins
            return b"".join(rec + b"\0" for rec in lines)
        finally:
            remove_index(idx)


def start_worktree_tree(
    root: Path, gdir: Path, paths: list[bytes] | None = None, held: Iterable[bytes] = (),
    objects: Path | None = None,
) -> TreeJob:
    """Begin computing the work tree's tree id without adding to the object store."""
    return TreeJob(root, gdir, paths, held, objects=objects)


def finish_worktree_tree(job: TreeJob) -> str:
    return job.result()


#: An untracked file bigger than this is hashed, never stored, by ``worktree_tree_sha`` (export's
#: default per-file cap: the package would not capture it either).
HOLD_OVER = 1 << 20


def worktree_tree_sha(
    root: Path, held: Iterable[bytes] | None = None, *, scratch: bool = False,
    hold_over: int = HOLD_OVER,
) -> str:  # fmt: skip
    """The tree id by a walk of the whole tree. ``held`` (default: the untracked files over
    ``hold_over`` bytes) are hashed, never stored. The other objects are kept unless
    ``scratch``: drift diffs the live tree after this (``resume.drift``)."""
    if held is None:
        held = _big_untracked(root, hold_over)
    return TreeJob(root, git_dir(root), None, held, scratch=scratch).result()


def _big_untracked(root: Path, over: int) -> list[bytes]:
    listing = run(root, ["ls-files", "-z", "--others", "--exclude-standard"]).stdout
    base = os.fsencode(root)
    big: list[bytes] = []
    for name in listing.split(b"\0"):
        with contextlib.suppress(OSError):
            st = os.lstat(os.path.join(base, name)) if name else None
            if st is not None and stat_mod.S_ISREG(st.st_mode) and st.st_size > over:
                big.append(name)
    return big
