"""Git objects built and read by hand: blobs, trees and commits for the shared cold store.

The cold store travels as ordinary git objects (``refs/contextfork/cold/<session>``), so these
are the plumbing calls it needs besides ``refs`` (blob ids and commits, written there): make a
tree from exact entries, move a ref only from the value it was read at, ask a remote which refs
it has, push with a per-ref verdict (a rejected ref is an answer, not a crash), and read blobs
one at a time with the size git announces checked before a byte of content is read.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from contextfork.errors import GitError
from contextfork.gitstate.argv import PINNED as _PINNED
from contextfork.gitstate.core import git_env, operand, out, run
from contextfork.gitstate.refs import ref_map

ZERO_SHA = "0" * 40


def make_tree(root: Path, entries: list[tuple[str, str, str, str]]) -> str:
    """A tree of exactly ``entries`` (mode, kind, sha, name); names must be single components."""
    for _mode, _kind, _sha, name in entries:
        if not name or "/" in name or "\0" in name:
            raise GitError(f"tree entry name {name!r} is not a single path component")
    listing = b"".join(
        f"{mode} {kind} {sha}\t".encode() + name.encode("utf-8", "surrogateescape") + b"\0"
        for mode, kind, sha, name in entries
    )
    return run(root, ["mktree", "-z"], input=listing).stdout.decode().strip()


def tree_of(root: Path, rev: str) -> str:
    return out(root, "rev-parse", "--verify", "-q", "--end-of-options", f"{operand(rev)}^{{tree}}")


def object_sizes(root: Path, revs: list[str]) -> dict[str, tuple[str, int] | None]:
    """(type, size) of each object ``revs`` name (``cat-file --batch-check``: no content is
    read), None for one that does not exist."""
    if not revs:
        return {}
    data = run(root, ["cat-file", "--batch-check"], input="".join(f"{r}\n" for r in revs).encode()).stdout
    out: dict[str, tuple[str, int] | None] = {}
    for rev, line in zip(revs, data.decode("utf-8", "replace").splitlines(), strict=True):
        parts = line.split()
        out[rev] = (parts[1], int(parts[2])) if len(parts) == 3 and parts[2].isdigit() else None
    return out


def is_ancestor(root: Path, a: str, b: str) -> bool:
    """``a`` is ``b`` or one of its ancestors."""
    args = ["merge-base", "--is-ancestor", "--end-of-options", operand(a), operand(b)]
    return run(root, args, check=False).returncode == 0


def set_ref(root: Path, ref: str, new: str, old: str | None) -> None:
    """Move ``ref`` to ``new`` only if it still holds ``old`` (None: only if it does not exist),
    so two writers racing on the same ref cannot lose each other's commit."""
    args = ["update-ref", "-m", "contextfork", "--end-of-options", operand(ref, "ref")]
    run(root, [*args, operand(new), old or ZERO_SHA])


def delete_ref(root: Path, ref: str) -> None:
    run(root, ["update-ref", "-d", "--end-of-options", operand(ref, "ref")], check=False)


def ls_remote(root: Path, remote: str, pattern: str) -> dict[str, str]:
    """The refs ``remote`` has under ``pattern`` (e.g. ``refs/contextfork/cold/*``): name → sha."""
    remote = operand(remote, "remote name")
    return ref_map(out(root, "ls-remote", "--refs", "--end-of-options", remote, pattern))


@dataclass(frozen=True)
class PushVerdict:
    ref: str  # the remote ref
    ok: bool
    summary: str  # git's own words: "[new reference]", "[up to date]", "[rejected] (fetch first)"


def push_verdicts(root: Path, remote: str, refspecs: list[str]) -> list[PushVerdict]:
    """Push ``refspecs`` and say per ref whether the remote took it (``--porcelain``).

    A rejected ref (the remote moved on: not a fast-forward) is a verdict the caller explains;
    only a push that could not run at all (no such remote, no network) raises GitError.
    """
    args = ["push", "--porcelain", "--end-of-options", operand(remote, "remote name")]
    proc = run(root, [*args, *refspecs], check=False)
    verdicts: list[PushVerdict] = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1 or parts[0] not in " +-*=!":
            continue
        flag, spec, summary = parts[0], parts[1], parts[2]
        verdicts.append(PushVerdict(spec.rpartition(":")[2], flag != "!", summary.strip()))
    if not verdicts and proc.returncode != 0:
        lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        raise GitError(f"git push failed: {lines[-1].strip() if lines else 'unknown error'}")
    return verdicts


def iter_blobs(
    root: Path, shas: list[str], max_size: int, *, starts_with: bytes = b""
) -> Generator[tuple[str, bytes], None, None]:
    """Blobs one at a time from one ``cat-file --batch`` process, in ``shas`` order.

    Each object's header (type, size) is read first; a non-blob, or a size over ``max_size``,
    raises GitError before its content is read, so a huge object never reaches memory. With
    ``starts_with`` the first bytes are read and checked before the rest (a blob of zeros
    where JSON is expected is refused after one byte, not after its whole size).
    """
    if not shas:
        return
    proc = subprocess.Popen(
        ["git", *_PINNED, "cat-file", "--batch", "--buffer"],
        cwd=root, env=git_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def ask() -> None:  # requests from a thread: git answers while we read, no round trips
        with contextlib.suppress(OSError, ValueError):
            stdin.write("".join(f"{sha}\n" for sha in shas).encode())
            stdin.close()

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        for sha in shas:
            header = proc.stdout.readline().split()
            if len(header) != 3:
                raise GitError(f"git cat-file: object {sha} is missing")
            kind, size = header[1].decode(), int(header[2])
            if kind != "blob":
                raise GitError(f"git cat-file: object {sha} is a {kind}, not a blob")
            if size > max_size:
                raise GitError(f"git cat-file: object {sha} holds {size} bytes, over {max_size}")
            head = proc.stdout.read(min(size, len(starts_with)))
            if head != starts_with:
                raise GitError(f"git cat-file: object {sha} does not start with {starts_with!r} "
                               f"(starts with {head[:8]!r})")  # fmt: skip
            data = head + proc.stdout.read(size - len(head))
            proc.stdout.read(1)  # the newline after the content
            if len(data) != size:
                raise GitError(f"git cat-file: object {sha} was cut short")
            yield sha, data
    finally:
        proc.kill()  # a refused object: git need not send the rest
        proc.wait()
        asker.join()
        proc.stdout.close()


def read_blobs(root: Path, shas: list[str]) -> dict[str, bytes]:
    """Contents of many blobs (no size limit: the caller checked the sizes git announced)."""
    return dict(iter_blobs(root, shas, sys.maxsize))
