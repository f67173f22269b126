"""History, refs, notes and packages stored as commits (sharing, log, drift counts)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from contextfork.errors import GitError
from contextfork.gitstate.core import head, operand, out, run
from contextfork.gitstate.trees import build_tree


def left_right_count(root: Path, a: str, b: str) -> tuple[int, int]:
    """(commits only in ``a``, commits only in ``b``) — behind/ahead of ``b`` relative to ``a``."""
    left, right = out(root, "rev-list", "--left-right", "--count", "--end-of-options",
                      f"{operand(a)}...{operand(b)}").split()
    return int(left), int(right)


def count_commits(root: Path, rev: str) -> int:
    return int(out(root, "rev-list", "--count", "--end-of-options", operand(rev)))


def merge_base(root: Path, a: str, b: str) -> str | None:
    proc = run(root, ["merge-base", "--end-of-options", operand(a), operand(b)], check=False)
    return (proc.stdout.decode().strip() or None) if proc.returncode == 0 else None


def commit_files(
    root: Path, files: list[tuple[str, Path]], message: str, parent: str | None,
    *, sign: bool = False,
) -> str:  # fmt: skip
    """A commit whose tree holds ``files`` (path in tree, source file); returns its SHA.
    ``sign``: signed with the user's configured key (``user.signingkey``, ``gpg.format``)."""
    tree = build_tree(root, None, b"", [("100644", rel, src) for rel, src in files])
    # commit-tree -m ends the message with a newline, stdin keeps it as given: same bytes as before
    text = message if message.endswith("\n") else message + "\n"
    return commit_tree(root, tree, [parent] if parent else [], text, sign=sign)


def commit_tree(
    root: Path, tree: str, parents: list[str], message: str, *, sign: bool = False
) -> str:
    """A commit of ``tree`` with ``parents`` (in order); an identity is supplied if none is set.
    ``sign``: signed with the user's configured key."""
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    if sign:
        args.append("-S")
    return run(root, args, input=message.encode("utf-8"), env=_ident_env()).stdout.decode().strip()


def is_signed(root: Path, sha: str) -> bool:
    """The commit carries a signature header (whether it verifies is ``verify_commit``'s job)."""
    header = run(root, ["cat-file", "commit", "--end-of-options", operand(sha)]).stdout.split(b"\n\n", 1)[0]
    return any(line.startswith(b"gpgsig") for line in header.split(b"\n"))


def verify_commit(root: Path, sha: str) -> str | None:
    """None when git verifies the commit's signature, else git's first line of complaint."""
    proc = run(root, ["verify-commit", "--end-of-options", operand(sha)], check=False)
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[0].strip() if lines else "signature does not verify"


def signer(root: Path, sha: str) -> tuple[str | None, str | None]:
    """(signer, key) git names for a signed commit (``%GS``, ``%GK``; None when it names none)."""
    data = out(root, "show", "-s", "--format=%GS%x00%GK", sha, "--")
    name, _, key = data.partition("\0")
    return (name.strip() or None), (key.strip() or None)


def blob_ids(root: Path, files: list[Path], *, write: bool = False) -> list[str]:
    """Git's blob id of each file, as ``hash-object`` computes it (no filters: the exact bytes);
    ``write``: each is stored as a blob too."""
    if not files:
        return []
    for f in files:
        if "\n" in str(f):
            raise GitError(f"cannot hash {f!r}: a newline in the path")
    listing = "".join(f"{f}\n" for f in files).encode("utf-8", "surrogateescape")
    args = ["hash-object", *(["-w"] if write else []), "--no-filters", "--stdin-paths"]
    shas = run(root, args, input=listing).stdout.decode().split()
    if len(shas) != len(files):
        raise GitError(f"git hash-object returned {len(shas)} ids for {len(files)} files")
    return shas


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
    run(root, ["update-ref", "--end-of-options", operand(ref, "ref"), operand(sha)])


def refs_under(root: Path, prefix: str) -> dict[str, str]:
    return ref_map(out(root, "for-each-ref", "--format=%(objectname)\t%(refname)", prefix))


def ref_map(data: str) -> dict[str, str]:
    """``sha<TAB>name`` lines (for-each-ref, ls-remote) as name → sha."""
    refs: dict[str, str] = {}
    for line in data.splitlines():
        sha, _, name = line.partition("\t")
        if name:
            refs[name] = sha
    return refs


_REF_LOCK = re.compile(r"Unable to create '([^'\n]{1,4096}\.lock)': File exists")
LOCK_WAIT = 3.0  # s: another push to the same ref finishes well within this


def push_refs(root: Path, remote: str, refspecs: list[str]) -> None:
    """Push; a ref the remote has locked is tried again for LOCK_WAIT s (another push of the
    same package is finishing), then named: a push killed with -9 leaves git's lock behind on
    the remote, and only its owner may remove it."""
    args = ["push", "--quiet", "--end-of-options", operand(remote, "remote name"), *refspecs]
    deadline = time.monotonic() + LOCK_WAIT
    pause = 0.05
    while True:
        proc = run(root, args, check=False)
        if proc.returncode == 0:
            return
        err = proc.stderr.decode("utf-8", "replace")
        lock = _REF_LOCK.search(err)
        if lock is None:
            first = next((ln.strip() for ln in err.splitlines() if ln.strip()), "unknown error")
            raise GitError(f"git push --quiet failed: {first}")
        if time.monotonic() >= deadline:
            raise GitError(
                f"git push failed: the remote holds the lock {lock.group(1)} (another push is "
                "running there, or a killed one left it: remove it once no git runs there)"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def fetch_refs(root: Path, remote: str, *refspecs: str) -> None:
    args = ["fetch", "--quiet", "--no-tags", "--end-of-options", operand(remote, "remote name")]
    run(root, [*args, *refspecs])


def commit_parents(root: Path, sha: str) -> list[str]:
    return out(root, "rev-list", "--parents", "-n1", "--end-of-options", operand(sha)).split()[1:]


def unpushed_count(root: Path, sha: str, remote: str) -> int:
    """Commits reachable from ``sha`` that no remote-tracking ref of ``remote`` holds."""
    # No --end-of-options here: --not and --remotes= follow the revision.
    operand(remote, "remote name")
    return int(out(root, "rev-list", "--count", operand(sha), "--not", f"--remotes={remote}"))


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    kind: str
    sha: str
    path: str
    size: int | None = None  # bytes of a blob, as git reports it without reading the object


def ls_tree_all(root: Path, rev: str) -> list[TreeEntry]:
    """Every entry of ``rev``'s tree, recursively, with blob sizes (``--long``): callers can
    refuse an oversized object before anything reads it."""
    args = ["ls-tree", "-r", "-z", "--long", "--full-tree", "--end-of-options", operand(rev)]
    data = run(root, args).stdout
    entries = []
    for rec in data.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        entries.append(TreeEntry(mode, kind, sha, name.decode("utf-8", "surrogateescape"),
                                 int(size) if size.isdigit() else None))
    return entries


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
