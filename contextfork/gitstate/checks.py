"""Questions ``validate`` asks git about a package's patches, asked in parallel.

The patches are read by git from their files (no stdin), so every question can run as its own
process at the same time: the paths and symlinks each patch touches (``--numstat``,
``--summary``), whether the recorded HEAD is a commit, and the tree of that HEAD read into one
temporary index. Whether each patch applies is then ``git apply --cached --check`` against that
index, both patches at once: nothing is written, not even the blobs a real apply would add
(those were most of validate's git time: one loose object per patched file).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from contextfork.gitstate.core import (
    _decode_err,
    commit_exists_finish,
    commit_exists_start,
    finish,
    operand,
    start,
)
from contextfork.gitstate.trees import parse_patch_paths, remove_index, temp_index_path

_HEX_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass
class PatchInfo:
    """What ``git apply --numstat/--summary`` says of one patch file (see ``patch_paths``)."""

    paths: list[str]
    links: list[str]
    error: str | None


class PendingInfo:
    """``--numstat`` and ``--summary`` of one patch file, running."""

    def __init__(self, root: Path, patch_file: Path, patch: bytes) -> None:
        name = str(patch_file.resolve())
        self._num = start(root, ["apply", "--numstat", "-z", name])
        # git prints a symlink mode only for a patch that carries one ("new file mode 120000",
        # "new mode 120000"): without those bytes there is no symlink to find, nor a --summary
        # to run.
        self._sum = start(root, ["apply", "--summary", name]) if b"120000" in patch else None

    def result(self) -> PatchInfo:
        num_out, num_err = self._num.communicate()
        summary = self._sum.communicate()[0] if self._sum is not None else b""
        if self._num.returncode != 0:
            return PatchInfo([], [], _decode_err(num_err))
        paths, links = parse_patch_paths(num_out, summary)
        return PatchInfo(paths, links, None)


def patch_info(root: Path, patch_file: Path, patch: bytes) -> PendingInfo:
    """Start asking git which paths ``patch_file`` (holding ``patch``) touches (``.result()``
    waits)."""
    return PendingInfo(root, patch_file, patch)


class BaseIndex:
    """A temporary index holding the tree of ``base`` (None: the empty index), read in the
    background; ``apply_checks`` waits for it."""

    def __init__(self, root: Path, gdir: Path, base: str | None) -> None:
        self.path = temp_index_path(gdir, "check")
        self.root = root
        self._proc: subprocess.Popen[bytes] | None = None
        if base is not None:
            self._proc = start(root, ["read-tree", "--end-of-options", operand(base)], env={"GIT_INDEX_FILE": self.path})

    def ready(self) -> None:
        if self._proc is not None:
            finish(self._proc, "read-tree")
            self._proc = None

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._proc is not None:
            self._proc.communicate()
        remove_index(self.path)


@contextmanager
def base_index(root: Path, gdir: Path, base: str | None) -> Iterator[BaseIndex]:
    """``base`` must be a full hex SHA (it is passed to ``read-tree`` as an argument)."""
    if base is not None and not is_full_sha(base):
        raise ValueError(f"not a full commit SHA: {base!r}")
    idx = BaseIndex(root, gdir, base)
    try:
        yield idx
    finally:
        idx.close()


def apply_checks(idx: BaseIndex, patch_files: list[Path]) -> list[str | None]:
    """Does each patch apply to the index (each on its own, all at once)? git's first error
    line per patch, or None."""
    idx.ready()
    env = {"GIT_INDEX_FILE": idx.path}
    procs = [
        start(idx.root, ["apply", "--cached", "--check", "--binary", str(f.resolve())], env=env)
        for f in patch_files
    ]
    out: list[str | None] = []
    for proc in procs:
        _stdout, stderr = proc.communicate()
        out.append(None if proc.returncode == 0 else _decode_err(stderr))
    return out


def is_full_sha(text: str) -> bool:
    return bool(_HEX_SHA.fullmatch(text))


__all__ = [
    "BaseIndex",
    "PatchInfo",
    "apply_checks",
    "base_index",
    "commit_exists_finish",
    "commit_exists_start",
    "is_full_sha",
    "patch_info",
]
