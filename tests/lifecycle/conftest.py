from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contextfork.hashing import canonical_sha256, sha256_bytes
from tests.helpers import Repo, clones_of_one_remote, make_repo
from tests.package.conftest import exactness_repo


def meta_of(pkg: Path) -> dict[str, Any]:
    return json.loads((pkg / "session_metadata.json").read_text())  # type: ignore[no-any-return]


def reseal(pkg: Path) -> None:
    """Recompute every manifest hash, like an attacker who knows the format."""
    m = json.loads((pkg / "manifest.json").read_text())
    for e in m["files"]:
        f = pkg / e["path"]
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            e["sha256"], e["size"] = sha256_bytes(data), len(data)
    m["package_sha256"] = canonical_sha256(m["files"])
    (pkg / "manifest.json").write_text(json.dumps(m))


@dataclass
class Shared:
    """A bare remote on disk and two clones of it (two machines)."""

    remote: Path
    a: Repo
    b: Repo


@pytest.fixture
def shared(tmp_path: Path) -> Shared:
    return Shared(*clones_of_one_remote(tmp_path))


@pytest.fixture
def exact_repo(tmp_path: Path) -> Repo:
    return exactness_repo(tmp_path / "repo")


@pytest.fixture
def history_repo(tmp_path: Path) -> Repo:
    """Three commits on main, clean work tree."""
    repo = make_repo(tmp_path / "hist", files={"a.txt": "1\n", "keep.txt": "k\n"})
    for i in (2, 3):
        repo.write("a.txt", f"{i}\n")
        repo.commit_all(f"c{i}")
    return repo
