"""The only module that runs git.

It calls the git binary directly (one process per question, several in parallel on the export
path) rather than through GitPython: byte-exact output (``--binary`` patches, CRLF, Latin-1),
porcelain formats with NUL separators, and no ~100 ms import on the hot path. GitPython is used
lazily for the few history questions where speed does not matter (``log``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from contextfork.errors import GitError, NotFoundError, UsageError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# Pin configuration that changes output formats, whatever the user's gitconfig says.
_PINNED = (
    "-c", "core.quotepath=false",
    "-c", "color.ui=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicprefix=false",
    "-c", "diff.external=",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
)  # fmt: skip

# Variables a hook inherits from the git process that runs it; they would redirect our calls.
_REPO_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARS}
    env.setdefault("LC_ALL", "C")
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env


def _decode_err(data: bytes) -> str:
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[0].strip() if lines else "unknown error"


def run(
    root: Path | str,
    args: Iterable[str],
    *,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    cmd = ["git", *_PINNED, *args]
    try:
        proc = subprocess.run(
            cmd, cwd=root, input=input, env=git_env(env), capture_output=True, check=False
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(list(args)[:2])} failed: {_decode_err(proc.stderr)}")
    return proc


def out(root: Path | str, *args: str, env: dict[str, str] | None = None) -> str:
    return run(root, args, env=env).stdout.decode("utf-8", "surrogateescape").strip()


def start(
    root: Path | str, args: Iterable[str], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start git in the background so independent questions run in parallel."""
    return subprocess.Popen(
        ["git", *_PINNED, *args],
        cwd=root,
        env=git_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc: subprocess.Popen[bytes], what: str) -> bytes:
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise GitError(f"git {what} failed: {_decode_err(stderr)}")
    return stdout


# --- repository discovery -------------------------------------------------------------------


def repo_root(path: Path | str | None = None) -> Path:
    """The work-tree root containing ``path`` (default: cwd)."""
    where = Path(path) if path is not None else Path.cwd()
    if not where.exists():
        raise NotFoundError(f"no such directory: {where}")
    if where.is_file():
        where = where.parent
    proc = run(where, ["rev-parse", "--show-toplevel"], check=False)
    if proc.returncode != 0:
        raise NotFoundError(
            f"not a git repository: {where}", hint="run inside a repository or pass --repo PATH"
        )
    top = proc.stdout.decode("utf-8", "surrogateescape").strip()
    if not top:
        raise UsageError(f"{where} is inside a bare repository or .git directory; use a work tree")
    return Path(top)


@dataclass(frozen=True)
class Location:
    root: Path
    git_dir: Path
    common_dir: Path


def locate(path: Path | str | None = None) -> Location:
    """Work-tree root, git dir and common dir in one git call (export's hot path)."""
    where = Path(path) if path is not None else Path.cwd()
    if not where.exists():
        raise NotFoundError(f"no such directory: {where}")
    if where.is_file():
        where = where.parent
    proc = run(where, ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) != 3:
        raise NotFoundError(f"not a git repository: {where}", hint="run inside a repository or pass --repo PATH")
    root = Path(lines[0])
    common = Path(lines[2])
    return Location(root, Path(lines[1]), common if common.is_absolute() else (where / common).resolve())


def git_dir(root: Path) -> Path:
    return Path(out(root, "rev-parse", "--absolute-git-dir"))


def common_dir(root: Path) -> Path:
    p = Path(out(root, "rev-parse", "--git-common-dir"))
    return p if p.is_absolute() else (root / p).resolve()


def config_get(root: Path, key: str) -> str | None:
    proc = run(root, ["config", "--get", key], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None


# --- HEAD --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    sha: str | None  # None on an unborn HEAD
    branch: str | None  # None when detached
    unborn: bool
    detached: bool


def head(root: Path) -> Head:
    sym = run(root, ["symbolic-ref", "-q", "HEAD"], check=False)
    branch = None
    if sym.returncode == 0:
        ref = sym.stdout.decode("utf-8", "surrogateescape").strip()
        branch = ref.removeprefix("refs/heads/")
    sha_proc = run(root, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False)
    sha = sha_proc.stdout.decode().strip() if sha_proc.returncode == 0 else None
    return Head(sha=sha, branch=branch, unborn=sha is None, detached=branch is None)


def commit_exists(root: Path, sha: str) -> bool:
    return run(root, ["cat-file", "-e", f"{sha}^{{commit}}"], check=False).returncode == 0


def resolve_commit(root: Path, rev: str) -> str | None:
    proc = run(root, ["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"], check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


# --- status ------------------------------------------------------------------------------------


@dataclass
class Entry:
    path: str
    xy: str
    kind: str  # "1" ordinary, "2" rename/copy, "u" unmerged
    orig_path: str | None = None
    score: str | None = None
    sub: str = "N..."
    mode_head: str = ""
    mode_index: str = ""
    mode_worktree: str = ""


@dataclass
class Status:
    oid: str | None = None
    branch: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    entries: list[Entry] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)


def _dec(raw: bytes, bad: list[str]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "backslashreplace")
        bad.append(text)
        return text


def status_args() -> list[str]:
    return [
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ]


def parse_status(data: bytes) -> Status:
    """Parse ``git status --porcelain=v2 -z --branch``; names are bytes, never re-quoted."""
    st = Status()
    items = data.split(b"\0")
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if not item:
            continue
        tag = item[:1]
        if tag == b"#":
            words = item.decode("utf-8", "replace").split(" ", 2)
            key, val = words[1], words[2] if len(words) > 2 else ""
            if key == "branch.oid":
                st.oid = None if val == "(initial)" else val
            elif key == "branch.head":
                st.branch = None if val == "(detached)" else val
            elif key == "branch.upstream":
                st.upstream = val
            elif key == "branch.ab":
                a, b = val.split(" ")
                st.ahead, st.behind = int(a[1:]), int(b[1:])
        elif tag == b"1":
            f = item.split(b" ", 8)
            st.entries.append(
                Entry(
                    path=_dec(f[8], st.undecodable), xy=f[1].decode(), kind="1", sub=f[2].decode(),
                    mode_head=f[3].decode(), mode_index=f[4].decode(), mode_worktree=f[5].decode(),
                )
            )  # fmt: skip
        elif tag == b"2":
            f = item.split(b" ", 9)
            orig = items[i]
            i += 1
            st.entries.append(
                Entry(
                    path=_dec(f[9], st.undecodable), xy=f[1].decode(), kind="2", sub=f[2].decode(),
                    mode_head=f[3].decode(), mode_index=f[4].decode(), mode_worktree=f[5].decode(),
                    orig_path=_dec(orig, st.undecodable), score=f[8].decode(),
                )
            )  # fmt: skip
        elif tag == b"u":
            f = item.split(b" ", 10)
            st.entries.append(
                Entry(
                    path=_dec(f[10], st.undecodable), xy=f[1].decode(), kind="u", sub=f[2].decode()
                )
            )
        elif tag == b"?":
            st.untracked.append(_dec(item[2:], st.undecodable))
    return st


def status(root: Path) -> Status:
    return parse_status(run(root, status_args()).stdout)


# --- diff and trees ----------------------------------------------------------------------------


def diff_args(base: str) -> list[str]:
    """Staged + unstaged changes of tracked paths against ``base`` as an exact binary patch."""
    return [
        "diff", base, "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv",
        "--no-renames", "--ignore-submodules=all", "--src-prefix=a/", "--dst-prefix=b/",
    ]  # fmt: skip


def diff_patch(root: Path, base: str) -> bytes:
    return run(root, diff_args(base)).stdout


def _tmp_index(root: Path, gdir: Path) -> str:
    fd, path = tempfile.mkstemp(prefix="contextfork-index-", dir=gdir)
    os.close(fd)
    src = gdir / "index"
    if src.exists():
        # copy2 keeps the index file's mtime: git's racy-entry check compares file mtimes with
        # it, and a fresh mtime would make a same-size edit in the same second look unchanged.
        shutil.copy2(src, path)
    else:
        os.unlink(path)
    return path


def start_worktree_tree(root: Path, gdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Begin computing the tree SHA of the whole working tree (tracked + untracked, not ignored).

    A temporary index (a copy of the real one, so stat data is reused) gets ``add -A`` and
    ``write-tree``; the user's index is never touched.
    """
    idx = _tmp_index(root, gdir)
    script = "git add -A -- . && git write-tree"
    env = git_env({"GIT_INDEX_FILE": idx})
    cfg = " ".join(f"{a}" for a in _PINNED)
    proc = subprocess.Popen(
        ["sh", "-c", script.replace("git ", f"git {cfg} ")],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, idx


def remove_index(idx: str) -> None:
    for p in (idx, idx + ".lock"):
        if os.path.exists(p):
            os.unlink(p)


def finish_worktree_tree(proc: subprocess.Popen[bytes], idx: str) -> str:
    try:
        data = finish(proc, "add -A / write-tree")
    finally:
        remove_index(idx)
    return data.decode().strip().splitlines()[-1]


def worktree_tree_sha(root: Path) -> str:
    proc, idx = start_worktree_tree(root, git_dir(root))
    return finish_worktree_tree(proc, idx)


def apply_check(root: Path, base: str | None, patch: bytes) -> str | None:
    """Does ``patch`` apply to commit ``base`` (not to the live work tree)? None when it does.

    Checked against a temporary index read from ``base`` so local edits cannot mask a problem.
    """
    if not patch.strip():
        return None
    gdir = git_dir(root)
    fd, idx = tempfile.mkstemp(prefix="contextfork-check-", dir=gdir)
    os.close(fd)
    os.unlink(idx)
    env = {"GIT_INDEX_FILE": idx}
    try:
        if base:
            run(root, ["read-tree", base], env=env)
        else:
            run(root, ["read-tree", "--empty"], env=env)
        proc = run(
            root,
            ["apply", "--cached", "--check", "--binary", "-"],
            input=patch,
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            return _decode_err(proc.stderr)
        return None
    finally:
        for p in (idx, idx + ".lock"):
            if os.path.exists(p):
                os.unlink(p)


def ls_tree_modes(root: Path, rev: str, paths: list[str]) -> dict[str, str]:
    """Mode of each existing path at ``rev`` (e.g. '120000' for a symlink)."""
    if not paths:
        return {}
    proc = run(root, ["ls-tree", "-z", rev, "--", *paths], check=False)
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


def ensure_excluded(root: Path, pattern: str = "/.contextfork/", *, common: Path | None = None) -> bool:
    """Add ``pattern`` to .git/info/exclude once; True when it was added now."""
    from contextfork import atomic

    exclude = (common or common_dir(root)) / "info" / "exclude"
    current = (
        exclude.read_text(encoding="utf-8", errors="surrogateescape") if exclude.exists() else ""
    )
    if any(line.strip() == pattern for line in current.splitlines()):
        return False
    sep = "" if not current or current.endswith("\n") else "\n"
    atomic.write_text(exclude, f"{current}{sep}{pattern}\n")
    return True


def patch_paths(root: Path, patch: bytes) -> tuple[list[str], list[str], str | None]:
    """Every path a patch touches, and the ones it creates as symlinks, as git itself parses them.

    Returns (paths, symlinks, error); ``error`` is git's own line when it cannot parse the patch.
    """
    if not patch.strip():
        return [], [], None
    num = run(root, ["apply", "--numstat", "-z", "-"], input=patch, check=False)
    if num.returncode != 0:
        return [], [], _decode_err(num.stderr)
    paths: list[str] = []
    recs = num.stdout.split(b"\0")
    i = 0
    while i < len(recs):
        rec = recs[i]
        i += 1
        if not rec:
            continue
        fields = rec.split(b"\t", 2)
        if len(fields) == 3 and fields[2]:
            paths.append(fields[2].decode("utf-8", "backslashreplace"))
        elif i + 1 < len(recs):  # rename/copy: empty name, then old and new
            paths.append(recs[i].decode("utf-8", "backslashreplace"))
            paths.append(recs[i + 1].decode("utf-8", "backslashreplace"))
            i += 2
    summ = run(root, ["apply", "--summary", "-"], input=patch, check=False)
    links = []
    for line in summ.stdout.decode("utf-8", "backslashreplace").splitlines():
        words = line.strip().split(" ", 3)
        if len(words) == 4 and words[0] in ("create", "mode") and words[2] == "120000":
            links.append(words[3])
        elif len(words) >= 4 and words[0] == "mode" and "120000" in line:
            links.append(line.rsplit(" ", 1)[-1])
    return paths, links, None


# --- resume, sharing, hooks (lifecycle) --------------------------------------------------------


def _new_index_path(root: Path) -> str:
    fd, idx = tempfile.mkstemp(prefix="contextfork-lc-", dir=git_dir(root))
    os.close(fd)
    os.unlink(idx)
    return idx


def left_right_count(root: Path, a: str, b: str) -> tuple[int, int]:
    """(commits only in ``a``, commits only in ``b``) — behind/ahead of ``b`` relative to ``a``."""
    left, right = out(root, "rev-list", "--left-right", "--count", f"{a}...{b}").split()
    return int(left), int(right)


def count_commits(root: Path, rev: str) -> int:
    return int(out(root, "rev-list", "--count", rev))


def merge_base(root: Path, a: str, b: str) -> str | None:
    proc = run(root, ["merge-base", a, b], check=False)
    return (proc.stdout.decode().strip() or None) if proc.returncode == 0 else None


def build_tree(
    root: Path,
    base: str | None,
    patch: bytes,
    blobs: list[tuple[str, str, Path | bytes]],
) -> str:
    """Tree SHA of ``base`` + ``patch`` + extra blobs (mode, path, file-or-bytes), in a temp index.

    This is the exported working state rebuilt from a package without touching any work tree,
    so it can be compared with the live tree (drift) or with the recorded tree SHA.
    """
    idx = _new_index_path(root)
    env = {"GIT_INDEX_FILE": idx}
    try:
        run(root, ["read-tree", base] if base else ["read-tree", "--empty"], env=env)
        if patch.strip():
            run(root, ["apply", "--cached", "--binary", "-"], input=patch, env=env)
        files = [(m, p, src) for m, p, src in blobs if isinstance(src, Path)]
        datas = [(m, p, src) for m, p, src in blobs if isinstance(src, bytes)]
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
    data = run(root, ["diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b]).stdout
    recs = [r for r in data.split(b"\0") if r]
    return [
        (recs[i].decode()[:1], recs[i + 1].decode("utf-8", "surrogateescape"))
        for i in range(0, len(recs) - 1, 2)
    ]


def apply_to_worktree(root: Path, patch: bytes, *, check_only: bool = False) -> str | None:
    """Apply a binary patch to the work tree and the index; git's own error line, or None."""
    if not patch.strip():
        return None
    args = ["apply", "--index", "--binary", *(["--check"] if check_only else []), "-"]
    proc = run(root, args, input=patch, check=False)
    return None if proc.returncode == 0 else _decode_err(proc.stderr)


def is_dirty(root: Path) -> list[str]:
    """Paths that make the work tree dirty (tracked changes or untracked, non-ignored files)."""
    st = status(root)
    return sorted({e.path for e in st.entries} | set(st.untracked))


def hooks_path(root: Path) -> Path:
    """The directory git runs hooks from (``core.hooksPath`` respected)."""
    p = Path(out(root, "rev-parse", "--git-path", "hooks"))
    return p if p.is_absolute() else (root / p).resolve()


# --- packages as commits (sharing) ---------------------------------------------------------------


def commit_files(
    root: Path, files: list[tuple[str, Path]], message: str, parent: str | None
) -> str:
    """A commit whose tree holds ``files`` (path in tree, source file); returns its SHA."""
    tree = build_tree(root, None, b"", [("100644", rel, src) for rel, src in files])
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return out(root, *args, env=_ident_env())


def _ident_env() -> dict[str, str]:
    """commit-tree needs an identity even where the user configured none."""
    env: dict[str, str] = {}
    for who in ("AUTHOR", "COMMITTER"):
        env.setdefault(f"GIT_{who}_NAME", os.environ.get(f"GIT_{who}_NAME", "contextfork"))
        env.setdefault(
            f"GIT_{who}_EMAIL", os.environ.get(f"GIT_{who}_EMAIL", "contextfork@localhost")
        )
    return env


def update_ref(root: Path, ref: str, sha: str) -> None:
    run(root, ["update-ref", ref, sha])


def refs_under(root: Path, prefix: str) -> dict[str, str]:
    data = out(root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    refs: dict[str, str] = {}
    for line in data.splitlines():
        name, _, sha = line.partition(" ")
        if name:
            refs[name] = sha
    return refs


def push_refs(root: Path, remote: str, refspecs: list[str]) -> None:
    run(root, ["push", "--quiet", remote, *refspecs])


def fetch_refs(root: Path, remote: str, refspec: str) -> None:
    run(root, ["fetch", "--quiet", "--no-tags", remote, refspec])


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    kind: str
    sha: str
    path: str


def ls_tree_all(root: Path, rev: str) -> list[TreeEntry]:
    data = run(root, ["ls-tree", "-r", "-z", "--full-tree", rev]).stdout
    entries = []
    for rec in data.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha = meta.decode().split(" ")
        entries.append(TreeEntry(mode, kind, sha, name.decode("utf-8", "surrogateescape")))
    return entries


def read_blobs(root: Path, shas: list[str]) -> dict[str, bytes]:
    """Contents of many blobs in one ``cat-file --batch`` process."""
    if not shas:
        return {}
    data = run(root, ["cat-file", "--batch"], input=("\n".join(shas) + "\n").encode()).stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for sha in shas:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split(b" ")
        if len(header) != 3:
            raise GitError(f"git cat-file: object {sha} is missing")
        size = int(header[2])
        blobs[sha] = data[nl + 1 : nl + 1 + size]
        pos = nl + 1 + size + 1
    return blobs


# --- notes and log -------------------------------------------------------------------------------

NOTES_REF = "refs/notes/contextfork"


def add_note(root: Path, commit: str, text: str, ref: str = NOTES_REF) -> None:
    run(root, ["notes", f"--ref={ref}", "add", "-f", "-F", "-", commit], input=text.encode(),
        env=_ident_env())  # fmt: skip


@dataclass(frozen=True)
class LogEntry:
    sha: str
    date: str
    subject: str
    note: str


def log_with_notes(root: Path, limit: int, ref: str = NOTES_REF) -> list[LogEntry]:
    """Recent commits with their note under ``ref`` (empty string when none)."""
    if head(root).unborn:
        return []
    fmt = "%H%x00%cI%x00%s%x00%N%x1e"
    data = out(root, "log", f"-n{limit}", f"--notes={ref}", f"--format={fmt}")
    entries = []
    for rec in data.split("\x1e"):
        rec = rec.strip("\n")
        if not rec:
            continue
        sha, date, subject, note = [*rec.split("\x00"), "", "", ""][:4]
        entries.append(LogEntry(sha, date, subject, note.strip()))
    return entries
