"""Path containment: one place decides whether a relative path from untrusted input is safe.

Packages, patches and cold-store references all carry paths written by someone else; a path
that escapes its root, targets ``.git/`` or passes through a symlink is refused everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


def unsafe_reason(rel: str) -> str | None:
    """Why ``rel`` must not be written below a root, or None when it is a plain relative path."""
    if not rel:
        return "empty path"
    if "\x00" in rel:
        return "NUL byte in path"
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        return "absolute path"
    # The components PurePosixPath would give (empty and "." ones dropped), by string
    # operations: validate asks this of every path of a package, thousands per run.
    split = rel.replace("\\", "/").split("/")
    parts = [p for p in split if p and p != "."]
    if ".." in parts:
        return "path traversal ('..')"
    if any(p.lower() == ".git" for p in parts):
        return "targets .git/"
    if "." in split:
        return "non-canonical path ('.')"
    return None


def symlink_in_parents(root: Path, rel: str) -> str | None:
    """The first existing parent of ``rel`` below ``root`` that is a symlink, if any."""
    cur = root
    parts = PurePosixPath(rel).parts
    for part in parts[:-1]:
        cur = cur / part
        if cur.is_symlink():
            return str(PurePosixPath(*PurePosixPath(rel).parts[: len(cur.relative_to(root).parts)]))
        if not cur.exists():
            return None
    return None


def contained(root: Path, candidate: Path) -> bool:
    """True when ``candidate`` resolves inside ``root`` (symlinks followed, sibling prefixes refused)."""
    try:
        real_root = Path(os.path.realpath(root))
        real = Path(os.path.realpath(candidate))
    except OSError:
        return False
    return real == real_root or real_root in real.parents


def safe_join(root: Path, rel: str) -> Path:
    """Join a validated relative path; raises ValueError when it is unsafe."""
    reason = unsafe_reason(rel)
    if reason:
        raise ValueError(f"{rel!r}: {reason}")
    link = symlink_in_parents(root, rel)
    if link:
        raise ValueError(f"{rel!r}: would be written through symlink {link!r}")
    return root / rel
