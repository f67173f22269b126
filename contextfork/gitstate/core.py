"""Running git: pinned configuration, a clean environment, discovery of the repo and HEAD.

The git package is the only place in contextfork that runs git. It calls the git binary
directly (one process per question, several in parallel on the export path) rather than through
GitPython: byte-exact output (``--binary`` patches, CRLF, Latin-1), porcelain formats with NUL
separators, and no ~100 ms import on the hot path.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from contextfork.errors import GitError, NotFoundError, UsageError

# The pinned configuration and the clean environment live in ``argv`` (standard library only:
# the pre-commit hook starts git with them before anything else is imported); objects and
# worktree import them from here.
from contextfork.gitstate.argv import PINNED as _PINNED
from contextfork.gitstate.argv import git_env as git_env
from contextfork.records import FrozenRecord

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Final

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def operand(value: str, what: str = "revision") -> str:
    """``value`` when git can only read it as an operand; refused with one line otherwise.

    A remote name or revision that begins with ``-`` reaches git as an option
    (``--upload-pack=CMD`` runs a program), and a line end or NUL splits a ``--stdin`` list.
    Calls also put ``--end-of-options`` before operands; this check makes the refusal say which
    value was wrong instead of relying on git's error for it.
    """
    if not value or value.startswith("-") or "\n" in value or "\0" in value or "\r" in value:
        why = "begins with '-'" if value.startswith("-") else "is empty or holds a line end or NUL"
        raise UsageError(f"{what} {value!r} {why}: refused (git would read it as an option)")
    return value


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


def _path_line(data: bytes) -> str:
    """One path git printed on its own line: only the line end goes (a path may end in a space)."""
    return data.decode("utf-8", "surrogateescape").removesuffix("\n")


def _path_out(root: Path | str, *args: str) -> str:
    return _path_line(run(root, args).stdout)


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
    top = _path_line(proc.stdout)
    if not top:
        raise UsageError(f"{where} is inside a bare repository or .git directory; use a work tree")
    return Path(top)


class Location(FrozenRecord):
    __match_args__ = ("root", "git_dir", "common_dir")
    root: Final[Path]
    git_dir: Final[Path]
    common_dir: Final[Path]

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir


def locate(path: Path | str | None = None) -> Location:
    """Work-tree root, git dir and common dir in one git call (export's hot path)."""
    where = Path(path) if path is not None else Path.cwd()
    if not where.exists():
        raise NotFoundError(f"no such directory: {where}")
    if where.is_file():
        where = where.parent
    proc = run(
        where,
        ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"],
        check=False,
    )
    lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
    if proc.returncode != 0:
        raise NotFoundError(
            f"not a git repository: {where}", hint="run inside a repository or pass --repo PATH"
        )
    if len(lines) != 4 or lines[3]:  # a newline inside a path: ask one question at a time
        root = repo_root(where)
        return Location(root, git_dir(root), common_dir(root))
    root = Path(lines[0])
    common = Path(lines[2])
    return Location(
        root, Path(lines[1]), common if common.is_absolute() else (where / common).resolve()
    )


def git_dir(root: Path) -> Path:
    return Path(_path_out(root, "rev-parse", "--absolute-git-dir"))


def common_dir(root: Path) -> Path:
    p = Path(_path_out(root, "rev-parse", "--git-common-dir"))
    return p if p.is_absolute() else (root / p).resolve()


def config_get(root: Path, key: str) -> str | None:
    proc = run(root, ["config", "--get", key], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None


class Head(FrozenRecord):
    __match_args__ = ("sha", "branch", "unborn", "detached")
    sha: Final[str | None]  # None on an unborn HEAD
    branch: Final[str | None]  # None when detached
    unborn: Final[bool]
    detached: Final[bool]

    def __init__(self, sha: str | None, branch: str | None, unborn: bool, detached: bool) -> None:
        self.sha = sha
        self.branch = branch
        self.unborn = unborn
        self.detached = detached


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
    return commit_exists_finish(commit_exists_start(root, sha))


def commit_exists_start(root: Path, sha: str) -> subprocess.Popen[bytes]:
    """Ask (in the background) whether ``sha`` names a commit; ``commit_exists_finish`` waits."""
    return start(root, ["cat-file", "-e", "--end-of-options", f"{operand(sha)}^{{commit}}"])


def commit_exists_finish(proc: subprocess.Popen[bytes]) -> bool:
    proc.communicate()
    return proc.returncode == 0


def resolve_commit(root: Path, rev: str) -> str | None:
    args = ["rev-parse", "-q", "--verify", "--end-of-options", f"{operand(rev)}^{{commit}}"]
    proc = run(root, args, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("BISECT_LOG", "bisect"),
)


def operation_in_progress(gdir: Path) -> str | None:
    """A merge, rebase, cherry-pick, revert or bisect that git has not finished, if any.

    Read from the marker files git leaves in the git dir (no process needed).
    """
    for name, op in _OPERATIONS:
        if (gdir / name).exists():
            return op
    return None


def ensure_excluded(
    root: Path, pattern: str, *, common: Path | None = None
) -> bool:
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


def hooks_path(root: Path) -> Path:
    """The directory git runs hooks from (``core.hooksPath`` respected)."""
    p = Path(_path_out(root, "rev-parse", "--git-path", "hooks"))
    return p if p.is_absolute() else (root / p).resolve()
