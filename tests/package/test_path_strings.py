"""Path checks done with string operations (validate asks them thousands of times per run) give
exactly what the PurePosixPath versions they replaced gave, on random hostile paths."""

from __future__ import annotations

import random
from pathlib import PurePosixPath

from contextfork.package.patchcheck import _ancestors
from contextfork.paths import unsafe_reason

PIECES = ["a", "b", "/", "//", ".", "..", ".git", ".GIT", "\\", "x y", "é", ":", "\x00", "", "./", "/."]


def _ancestors_by_pathlib(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts
    return [str(PurePosixPath(*parts[:i])) for i in range(1, len(parts))]


def _unsafe_by_pathlib(rel: str) -> str | None:
    if not rel:
        return "empty path"
    if "\x00" in rel:
        return "NUL byte in path"
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        return "absolute path"
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if any(p == ".." for p in parts):
        return "path traversal ('..')"
    if any(p.lower() == ".git" for p in parts):
        return "targets .git/"
    if any(p == "." for p in rel.replace("\\", "/").split("/")):
        return "non-canonical path ('.')"
    return None


def test_string_path_checks_match_pathlib_on_random_paths() -> None:
    rng = random.Random(1415)
    for _ in range(30000):
        rel = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8)))
        assert _ancestors(rel) == _ancestors_by_pathlib(rel), rel
        assert unsafe_reason(rel) == _unsafe_by_pathlib(rel), rel
