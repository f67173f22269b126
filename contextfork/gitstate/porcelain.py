"""``git status --porcelain=v2 -z`` parsed without re-quoting names."""

from __future__ import annotations

from pathlib import Path

from contextfork.gitstate.argv import STATUS
from contextfork.gitstate.core import run
from contextfork.records import Record


class Entry(Record):
    __match_args__ = ("path", "xy", "kind", "orig_path", "score", "sub", "mode_head",
                      "mode_index", "mode_worktree", "hash_index", "raw_path", "raw_orig")  # fmt: skip

    def __init__(
        self, path: str, xy: str, kind: str, orig_path: str | None = None,
        score: str | None = None, sub: str = "N...", mode_head: str = "", mode_index: str = "",
        mode_worktree: str = "", hash_index: str = "", raw_path: bytes = b"",
        raw_orig: bytes | None = None,
    ) -> None:  # fmt: skip
        self.path = path
        self.xy = xy
        self.kind = kind  # "1" ordinary, "2" rename/copy, "u" unmerged
        self.orig_path = orig_path
        self.score = score
        self.sub = sub
        self.mode_head = mode_head
        self.mode_index = mode_index
        self.mode_worktree = mode_worktree
        self.hash_index = hash_index
        self.raw_path = raw_path  # the name as git printed it (``path`` may be a lossy decode)
        self.raw_orig = raw_orig


class Status(Record):
    __match_args__ = ("oid", "branch", "upstream", "ahead", "behind", "entries", "untracked",
                      "undecodable", "worktree_paths", "untracked_raw")  # fmt: skip

    def __init__(
        self, oid: str | None = None, branch: str | None = None, upstream: str | None = None,
        ahead: int | None = None, behind: int | None = None, entries: list[Entry] | None = None,
        untracked: list[str] | None = None, undecodable: list[str] | None = None,
        worktree_paths: list[bytes] | None = None, untracked_raw: list[bytes] | None = None,
    ) -> None:  # fmt: skip
        self.oid = oid
        self.branch = branch
        self.upstream = upstream
        self.ahead = ahead
        self.behind = behind
        self.entries: list[Entry] = entries if entries is not None else []
        self.untracked: list[str] = untracked if untracked is not None else []
        self.undecodable: list[str] = undecodable if undecodable is not None else []
        #: Raw names ``add -A`` would stage: work-tree side changed (or unmerged), and untracked.
        self.worktree_paths: list[bytes] = worktree_paths if worktree_paths is not None else []
        #: ``untracked`` as git printed the names (the same order).
        self.untracked_raw: list[bytes] = untracked_raw if untracked_raw is not None else []


def _dec(raw: bytes, bad: list[str]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "backslashreplace")
        bad.append(text)
        return text


def status_args() -> list[str]:
    return list(STATUS)


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
            if f[1][1:2] != b".":
                st.worktree_paths.append(f[8])
            st.entries.append(
                Entry(
                    path=_dec(f[8], st.undecodable), xy=f[1].decode(), kind="1", sub=f[2].decode(),
                    mode_head=f[3].decode(), mode_index=f[4].decode(), mode_worktree=f[5].decode(),
                    hash_index=f[7].decode(), raw_path=f[8],
                )
            )  # fmt: skip
        elif tag == b"2":
            f = item.split(b" ", 9)
            orig = items[i]
            i += 1
            if f[1][1:2] != b".":
                st.worktree_paths.append(f[9])
            st.entries.append(
                Entry(
                    path=_dec(f[9], st.undecodable), xy=f[1].decode(), kind="2", sub=f[2].decode(),
                    mode_head=f[3].decode(), mode_index=f[4].decode(), mode_worktree=f[5].decode(),
                    orig_path=_dec(orig, st.undecodable), score=f[8].decode(),
                    hash_index=f[7].decode(), raw_path=f[9], raw_orig=orig,
                )
            )  # fmt: skip
        elif tag == b"u":
            f = item.split(b" ", 10)
            st.worktree_paths.append(f[10])
            st.entries.append(
                Entry(
                    path=_dec(f[10], st.undecodable), xy=f[1].decode(), kind="u", sub=f[2].decode(),
                    raw_path=f[10],
                )
            )
        elif tag == b"?":
            st.untracked.append(_dec(item[2:], st.undecodable))
            st.untracked_raw.append(item[2:])
            st.worktree_paths.append(item[2:])
    return st


def status(root: Path) -> Status:
    return parse_status(run(root, status_args()).stdout)
