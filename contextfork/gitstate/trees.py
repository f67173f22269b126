"""Diffs, patches and trees: the exact binary patch, temp-index tree SHAs, apply checks."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from contextfork import scratch
from contextfork.errors import GitError
from contextfork.gitstate.argv import DIFF_OPTIONS
from contextfork.gitstate.core import (
    _decode_err,
    common_dir,
    git_dir,
    operand,
    out,
    run,
    start,
)
from contextfork.gitstate.pipes import drain
from contextfork.gitstate.porcelain import status


def diff_args(base: str, *, cached: bool = False) -> list[str]:
    """Staged + unstaged changes of tracked paths against ``base`` as an exact binary patch
    (``cached``: the staged changes only, i.e. the index against ``base``)."""
    return ["diff", *(["--cached"] if cached else []), operand(base), *DIFF_OPTIONS]


def _read_tree(tree: str | None) -> list[str]:
    return ["read-tree", "--end-of-options", operand(tree)] if tree else ["read-tree", "--empty"]


def diff_patch(root: Path, base: str, *, cached: bool = False) -> bytes:
    return run(root, diff_args(base, cached=cached)).stdout


def temp_index_path(gdir: Path, kind: str) -> str:
    """A fresh name for a temporary index in the git dir (``contextfork-<kind>-<pid>-…``, what
    the sweep of a killed run's leftovers looks for); nothing is left at it."""
    fd, path = scratch.temp_file(gdir, f"contextfork-{kind}-{os.getpid()}-")
    os.close(fd)
    os.unlink(path)
    return path


_TEMP_PREFIXES = ("contextfork-index-", "contextfork-check-", "contextfork-lc-", "contextfork-objs-")


def sweep_stale_temps(gdir: Path) -> list[str]:
    """Remove temporary indexes (and object dirs) that killed runs left in the git dir.

    Names carry the owner's pid; only a dead owner's, or an old one's, are removed (by the
    inode change time too: a temporary index keeps the real index's mtime).
    """
    return scratch.sweep_stale(gdir, _TEMP_PREFIXES, files=True, by_ctime=True)


def remove_index(idx: str) -> None:
    for p in (idx, idx + ".lock"):
        if os.path.exists(p):
            os.unlink(p)


class IndexTree:
    """``index_tree`` started in the background (the pre-commit checkpoint asks it beside the
    export, off its critical path), on a private copy of the index: ``write-tree`` locks the
    index it reads, and fails if a ``status`` or ``diff`` refreshing that index holds the lock
    at that moment. The trees land in the object store, as with ``index_tree``."""

    def __init__(self, root: Path, gdir: Path, index_file: str | None = None) -> None:
        src = Path(root, index_file) if index_file else gdir / "index"
        self._copy = temp_index_path(gdir, "index")  # swept if a killed run leaves it
        with contextlib.suppress(FileNotFoundError):  # no index: git reads none as empty
            scratch.copy_file(src, self._copy)
        try:
            self._job = drain(start(root, ["write-tree"], env={"GIT_INDEX_FILE": self._copy}))
        except BaseException:
            remove_index(self._copy)
            raise

    def result(self) -> str | None:
        """The tree id; None when git cannot write it (unmerged entries)."""
        try:
            tree = self._job.finish("write-tree").decode().strip()
        except GitError:
            return None
        finally:
            remove_index(self._copy)
        return tree or None

    def discard(self) -> None:
        self._job.discard()
        remove_index(self._copy)


def index_tree(root: Path, index_file: str | None = None) -> str | None:
    """Tree SHA of an index (the one git is committing when ``index_file`` comes from a hook's
    GIT_INDEX_FILE); None when it cannot be written (unmerged entries)."""
    env = {"GIT_INDEX_FILE": str(Path(root, index_file))} if index_file else None
    proc = run(root, ["write-tree"], env=env, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def apply_check(
    root: Path, base: str | None, patch: bytes, modes_of: list[str] | None = None
) -> tuple[str | None, dict[str, str]]:
    """Does ``patch`` apply to commit ``base`` (not to the live work tree)? (error or None, modes).

    Checked against a temporary index read from ``base`` so local edits cannot mask a problem.
    When it applies, ``modes`` gives the mode each path of ``modes_of`` has *after* the patch
    (e.g. '120000' where a rename or copy turns a name into a symlink). The blobs the patch
    creates go to a throw-away object directory, so validating never adds objects to the repo.
    """
    if not patch.strip():
        return None, (ls_tree_modes(root, base, modes_of or []) if base else {})
    where = run(root, ["rev-parse", "--absolute-git-dir", "--git-path", "objects"]).stdout
    lines = where.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) == 3:
        gdir, real_objs = Path(lines[0]), Path(root, lines[1])
    else:  # a newline inside a path: ask one question at a time
        gdir, real_objs = git_dir(root), common_dir(root) / "objects"
    idx = temp_index_path(gdir, "check")
    objs = scratch.temp_dir(gdir, f"contextfork-objs-{os.getpid()}-")
    env = {
        "GIT_INDEX_FILE": idx,
        "GIT_OBJECT_DIRECTORY": objs,
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(real_objs.resolve()),
    }
    try:
        run(root, _read_tree(base), env=env)
        proc = run(root, ["apply", "--cached", "--binary", "-"], input=patch, env=env, check=False)
        if proc.returncode != 0:
            return _decode_err(proc.stderr), {}
        modes: dict[str, str] = {}
        if modes_of:
            listing = run(root, ["ls-files", "-s", "-z", "--", *modes_of], env=env).stdout
            for rec in listing.split(b"\0"):
                meta, _, name = rec.partition(b"\t")
                if name:
                    modes[name.decode("utf-8", "surrogateescape")] = meta.split(b" ")[0].decode()
        return None, modes
    finally:
        remove_index(idx)
        scratch.remove_dir(objs)


def ls_tree_modes(root: Path, rev: str, paths: list[str]) -> dict[str, str]:
    """Mode of each existing path at ``rev`` (e.g. '120000' for a symlink)."""
    if not paths:
        return {}
    proc = run(root, ["ls-tree", "-z", "--end-of-options", operand(rev), "--", *paths], check=False)
    modes: dict[str, str] = {}
    for rec in proc.stdout.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        modes[name.decode("utf-8", "surrogateescape")] = meta.split(b" ")[0].decode()
    return modes


def submodule_paths(root: Path) -> list[str]:
    proc = run(root, ["ls-files", "-z", "--stage"], check=False)
    subs = []
    for rec in proc.stdout.split(b"\0"):
        if rec.startswith(b"160000 "):
            subs.append(rec.partition(b"\t")[2].decode("utf-8", "surrogateescape"))
    return subs


def patch_paths(root: Path, patch: bytes) -> tuple[list[str], list[str], str | None]:
    """Every path a patch touches, and the ones it creates as symlinks, as git itself parses them.

    Returns (paths, symlinks, error); ``error`` is git's own line when it cannot parse the patch.
    """
    if not patch.strip():
        return [], [], None
    num = run(root, ["apply", "--numstat", "-z", "-"], input=patch, check=False)
    if num.returncode != 0:
        return [], [], _decode_err(num.stderr)
    summary = run(root, ["apply", "--summary", "-"], input=patch, check=False).stdout
    paths, links = parse_patch_paths(num.stdout, summary)
    return paths, links, None


def parse_patch_paths(numstat_z: bytes, summary: bytes) -> tuple[list[str], list[str]]:
    """(paths, symlinks) from ``git apply --numstat -z`` and ``git apply --summary`` output."""
    raw: list[bytes] = []
    recs = numstat_z.split(b"\0")
    i = 0
    while i < len(recs):
        rec = recs[i]
        i += 1
        if not rec:
            continue
        fields = rec.split(b"\t", 2)
        if len(fields) == 3 and fields[2]:
            raw.append(fields[2])
        elif i + 1 < len(recs):  # rename/copy: empty name, then old and new
            raw += [recs[i], recs[i + 1]]
            i += 2
    # --summary prints names raw (never quoted, even with a newline in them), so its lines cannot
    # be split: look for each exact name git reported above instead. A false match only makes a
    # path count as a symlink, which is the safe side.
    links = [
        name
        for name in dict.fromkeys(raw)
        if b" create mode 120000 " + name + b"\n" in summary or b"=> 120000 " + name + b"\n" in summary
    ]
    paths = [n.decode("utf-8", "backslashreplace") for n in raw]
    return paths, [n.decode("utf-8", "backslashreplace") for n in links]


def _add_snapshots(
    root: Path, env: dict[str, str], snapshot_root: Path, files: list[tuple[str, str]]
) -> None:
    """``git add`` snapshot files (mode, repo path) as if they stood at their repo paths.

    The snapshot directory is the work tree and the temp index the index, so git applies the same
    conversion (core.autocrlf, .gitattributes text/eol, clean filters) as ``add -A`` did when the
    exported tree SHA was computed; the recorded mode then replaces the snapshot file's own.
    """
    wt = {**env, "GIT_DIR": str(git_dir(root)), "GIT_WORK_TREE": str(snapshot_root)}

    def listing(paths: list[str]) -> bytes:
        return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)

    add = ["--literal-pathspecs", "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"]
    run(snapshot_root, add, input=listing([p for _m, p in files]), env=wt)
    for flag, want in (("+x", True), ("-x", False)):
        paths = [p for m, p in files if (m == "100755") == want]
        if paths:
            run(snapshot_root, ["update-index", f"--chmod={flag}", "-z", "--stdin"],
                input=listing(paths), env=wt)  # fmt: skip


def build_tree(
    root: Path,
    base: str | None,
    patch: bytes,
    blobs: list[tuple[str, str, Path | bytes]],
    *,
    snapshot_root: Path | None = None,
) -> str:
    """Tree SHA of ``base`` + ``patch`` + extra blobs (mode, path, file-or-bytes), in a temp index.

    This is the exported working state rebuilt from a package without touching any work tree,
    so it can be compared with the live tree (drift) or with the recorded tree SHA. Files are
    stored byte-exact, unless ``snapshot_root`` says they are snapshots of work-tree files
    (``snapshot_root / path``): those go through git's own conversion, as ``add -A`` did.
    """
    idx = temp_index_path(git_dir(root), "lc")
    env = {"GIT_INDEX_FILE": idx}
    try:
        run(root, _read_tree(base), env=env)
        if patch.strip():
            run(root, ["apply", "--cached", "--binary", "-"], input=patch, env=env)
        if snapshot_root is not None:
            snaps = [(m, p) for m, p, s in blobs if isinstance(s, Path)]
            if snaps:
                _add_snapshots(root, env, snapshot_root, snaps)
            blobs = [b for b in blobs if isinstance(b[2], bytes)]
        # --stdin-paths reads one path per line: a source path with a newline goes in as bytes.
        files = [(m, p, s) for m, p, s in blobs if isinstance(s, Path) and "\n" not in str(s)]
        datas = [(m, p, s if isinstance(s, bytes) else s.read_bytes()) for m, p, s in blobs
                 if isinstance(s, bytes) or "\n" in str(s)]  # fmt: skip
        shas: list[str] = []
        if files:
            listing = "\n".join(str(src) for _m, _p, src in files).encode() + b"\n"
            proc = run(root, ["hash-object", "-w", "--no-filters", "--stdin-paths"], input=listing)
            shas += proc.stdout.decode().split()
        for _m, _p, data in datas:
            assert isinstance(data, bytes)
            proc = run(root, ["hash-object", "-w", "--no-filters", "--stdin"], input=data)
            shas.append(proc.stdout.decode().strip())
        info = b"".join(
            f"{mode} {sha}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
            for (mode, path, _s), sha in zip([*files, *datas], shas, strict=True)
        )
        if info:
            run(root, ["update-index", "--add", "-z", "--index-info"], input=info, env=env)
        return out(root, "write-tree", env=env)
    finally:
        remove_index(idx)


def diff_trees(root: Path, a: str, b: str) -> list[tuple[str, str]]:
    """(status letter, path) for every path that differs between trees ``a`` and ``b``."""
    args = ["diff-tree", "-r", "-z", "--no-renames", "--name-status", "--end-of-options"]
    data = run(root, [*args, operand(a), operand(b)]).stdout
    recs = [r for r in data.split(b"\0") if r]
    return [
        (recs[i].decode()[:1], recs[i + 1].decode("utf-8", "surrogateescape"))
        for i in range(0, len(recs) - 1, 2)
    ]


def apply_to_worktree(
    root: Path, patch: bytes, *, check_only: bool = False, target: str = "both"
) -> str | None:
    """Apply a binary patch to the work tree and the index (``target`` "both"), the work tree
    only ("worktree") or the index only ("index"); git's own error line, or None."""
    if not patch.strip():
        return None
    where = {"both": ["--index"], "worktree": [], "index": ["--cached"]}[target]
    args = ["apply", *where, "--binary", *(["--check"] if check_only else []), "-"]
    proc = run(root, args, input=patch, check=False)
    return None if proc.returncode == 0 else _decode_err(proc.stderr)


def refresh_index(root: Path) -> None:
    """Re-stat the index after files were written behind git's back (no content change)."""
    run(root, ["update-index", "-q", "--refresh"], check=False)


def reset_index(root: Path, tree: str) -> None:
    """Make the index exactly ``tree`` again (the work tree is not touched)."""
    run(root, _read_tree(tree))
    refresh_index(root)


def is_dirty(root: Path) -> list[str]:
    """Paths that make the work tree dirty (tracked changes or untracked, non-ignored files)."""
    st = status(root)
    return sorted({e.path for e in st.entries} | set(st.untracked))
