"""The staged patch (HEAD to the index) without a second whole-tree diff.

Export needs two patches: HEAD to the work tree, and HEAD to the index. For a path whose index
and work tree agree (status ``Y`` is ``.``), git writes the same section in both: same blobs,
same modes. So the staged patch is those sections, cut out of the work-tree patch, plus a
``git diff --cached`` of only the paths whose work tree differs again. Sections are put in
git's order: by the raw path bytes, as git sorts the index.

Anything this cannot do exactly returns None, and the caller runs the whole ``--cached`` diff.
That covers an unmerged path, a section header it cannot read, a path it expected but did not
find, or too many paths to name. ``tests/package/test_staged_patch.py`` compares the result
byte for byte with git's own ``diff --cached`` on awkward trees.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

from contextfork.gitstate.core import start
from contextfork.gitstate.porcelain import Status
from contextfork.gitstate.trees import diff_args

MAX_NAMED = 400  # more paths than this on one command line: the whole --cached diff instead
MAX_NAMED_BYTES = 64 << 10  # nor more bytes of names than this (Linux: 128 KiB per argument)
_HEADER = b"diff --git "
_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
            ord("r"): 13, ord('"'): 34, ord("\\"): 92}  # fmt: skip


class Plan:
    """What export needs from git for the staged patch, decided from status."""

    def __init__(self, reuse: dict[bytes, tuple[str, str]], ask: list[bytes]) -> None:
        # sections taken from the work-tree patch, with the blob and mode status saw in the
        # index: a section is reused only if its post-image is exactly that (a file edited
        # while export ran must not carry work-tree bytes into the staged patch)
        self.reuse = reuse
        self.ask = ask  # paths asked of `git diff --cached`

    def start(self, root: Path) -> subprocess.Popen[bytes] | None:
        if not self.ask:
            return None
        args = [*diff_args("HEAD", cached=True), "--", *(p.decode("utf-8", "surrogateescape") for p in self.ask)]
        return start(root, args, env={"GIT_LITERAL_PATHSPECS": "1"})


def plan(st: Status) -> Plan | None:
    """None when the shortcut cannot be exact (unmerged paths) or would not pay."""
    reuse: dict[bytes, tuple[str, str]] = {}
    ask: list[bytes] = []
    for e in st.entries:
        if e.kind == "u":
            return None
        if e.sub.startswith("S") or e.xy[0] == ".":
            continue  # submodules are not in the patches; unstaged-only paths are not staged
        if e.xy[1] != ".":
            ask.extend([e.raw_path] + ([e.raw_orig] if e.raw_orig is not None else []))
            continue
        reuse[e.raw_path] = (e.hash_index, e.mode_index)
        if e.raw_orig is not None:  # the old name of a staged rename: a deletion in both
            reuse[e.raw_orig] = ("0" * len(e.hash_index), "000000")
    if not can_name(ask):
        return None
    return Plan(reuse, ask)


def can_name(paths: list[bytes]) -> bool:
    """Few and short enough to name on one git command line (else: ask for the whole tree)."""
    return len(paths) <= MAX_NAMED and sum(len(p) + 1 for p in paths) <= MAX_NAMED_BYTES


def _unquote(data: bytes) -> tuple[bytes, int] | None:
    """A C-quoted git name at the start of ``data`` (after the opening quote): (name, length
    consumed including the closing quote), or None."""
    out = bytearray()
    i = 0
    while i < len(data):
        c = data[i]
        if c == 0x22:  # closing quote
            return bytes(out), i + 1
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        nxt = data[i + 1 : i + 2]
        if not nxt:
            return None
        if nxt[0] in _ESCAPES:
            out.append(_ESCAPES[nxt[0]])
            i += 2
        elif data[i + 1 : i + 4].isdigit() and len(data[i + 1 : i + 4]) == 3:
            out.append(int(data[i + 1 : i + 4], 8))
            i += 4
        else:
            return None
    return None


def section_path(header: bytes) -> bytes | None:
    """The path of a ``diff --git a/P b/P`` line (no renames: both sides name P)."""
    rest = header[len(_HEADER) :]
    if rest.startswith(b'"'):
        got = _unquote(rest[1:])
        if got is None or not got[0].startswith(b"a/"):
            return None
        return got[0][2:]
    size, odd = divmod(len(rest) - 5, 2)  # b"a/" + P + b" b/" + P
    if odd or size < 1:
        return None
    name = rest[2 : 2 + size]
    return name if rest == b"a/" + name + b" b/" + name else None


def sections(patch: bytes) -> dict[bytes, bytes] | None:
    """Path -> its whole section of a patch; None if a header cannot be read."""
    out: dict[bytes, bytes] = {}
    if not patch:
        return out
    if not patch.startswith(_HEADER):
        return None
    starts = [0]
    pos = patch.find(b"\n" + _HEADER)
    while pos != -1:
        starts.append(pos + 1)
        pos = patch.find(b"\n" + _HEADER, pos + 1)
    starts.append(len(patch))
    for a, b in itertools.pairwise(starts):
        chunk = patch[a:b]
        name = section_path(chunk[: chunk.find(b"\n")] if b"\n" in chunk else chunk)
        if name is None or name in out:
            return None
        out[name] = chunk
    return out


def post_image(section: bytes) -> tuple[str | None, str | None]:
    """(blob, mode) a section leaves: from its ``index A..B[ mode]`` line and its ``new mode``
    / ``new file mode`` / ``deleted file mode`` lines (None where the section does not say)."""
    blob: str | None = None
    mode: str | None = None
    for line in section.split(b"\n", 8)[1:8]:  # the extended header, before any hunk
        if line.startswith(b"index "):
            words = line[6:].split(b" ")
            blob = words[0].partition(b"..")[2].decode("ascii", "replace")
            if len(words) > 1:
                mode = words[1].decode("ascii", "replace")
        elif line.startswith((b"new mode ", b"new file mode ")):
            mode = line.rsplit(b" ", 1)[1].decode("ascii", "replace")
        elif line.startswith(b"deleted file mode "):
            mode = "000000"
        elif line.startswith((b"--- ", b"@@", b"GIT binary patch", b"Binary files ")):
            break
    return blob, mode


def _is_index_side(section: bytes, blob: str, mode: str) -> bool:
    got_blob, got_mode = post_image(section)
    return (got_blob is None or got_blob == blob) and (got_mode is None or got_mode == mode) and (
        got_blob is not None or got_mode is not None
    )


def assemble(plan_: Plan, worktree_patch: bytes, asked: bytes) -> bytes | None:
    """The staged patch, or None when a section is missing, unexpected or not the index's."""
    full = sections(worktree_patch)
    extra = sections(asked)
    if full is None or extra is None:
        return None
    if not plan_.reuse.keys() <= full.keys() or not extra.keys() <= set(plan_.ask):
        return None
    if not all(_is_index_side(full[n], *want) for n, want in plan_.reuse.items()):
        return None
    chosen = {name: full[name] for name in plan_.reuse}
    chosen.update(extra)
    return b"".join(chosen[name] for name in sorted(chosen))
