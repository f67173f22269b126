"""Two machines and a bare remote for the shared cold store tests (real git, real clones)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfork.cold.node import artifact_sha256_of, node_bytes, payload_bytes_of, projection_of
from contextfork.cold.scenario import build_reference_scenario
from contextfork.cold.share import REF_PREFIX
from contextfork.hashing import canonical_sha256, sha256_bytes
from tests.helpers import Repo, clones_of_one_remote

SESSION = "s1"
QUESTION = "What port are we using for PostgreSQL, and which migration applied the billing table?"


@dataclass
class Machines:
    remote: Path
    a: Repo
    b: Repo


def machines(tmp_path: Path) -> Machines:
    return Machines(*clones_of_one_remote(tmp_path))


def store(repo: Repo, session: str = SESSION) -> Path:
    return repo.path / ".contextfork" / "cold" / session


def fold_scenario(repo: Repo, session: str = SESSION) -> Path:
    build_reference_scenario(store(repo, session))
    return store(repo, session)


def node_file(repo: Repo, step: int, session: str = SESSION) -> Path:
    return store(repo, session) / "cold_nodes" / f"step_{step:06d}.json"


def node_of(repo: Repo, step: int, session: str = SESSION) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(node_file(repo, step, session).read_bytes())
    return data


def rehash(node: dict[str, Any]) -> dict[str, Any]:
    """Recompute all three identities, as an attacker (or an old writer) who knows the format."""
    node["payload_bytes"] = len(payload_bytes_of(node))
    node["payload_sha256"] = sha256_bytes(payload_bytes_of(node))
    node["projection_sha256"] = canonical_sha256(projection_of(node))
    node["artifact_sha256"] = artifact_sha256_of(node)
    return node


def remote_tree(repo: Repo, session: str = SESSION) -> list[str]:
    """``ls-tree`` lines of the remote commit's cold_nodes directory, as fetched by ``repo``."""
    repo.git("fetch", "-q", "origin", f"+{REF_PREFIX}{session}:refs/forge/{session}")
    return repo.git("ls-tree", f"refs/forge/{session}:cold_nodes").splitlines()


def forge(repo: Repo, root_lines: list[str], session: str = SESSION) -> str:
    """Push a commit whose root tree is exactly ``root_lines`` (ls-tree format) as the session."""
    tree = repo.git(
        "mktree", input=("\n".join(root_lines) + "\n").encode("utf-8", "surrogateescape")
    )
    commit = repo.git("commit-tree", tree, "-m", "forged")
    repo.git("push", "-q", "origin", f"+{commit}:{REF_PREFIX}{session}")
    return commit


def blob(repo: Repo, data: bytes) -> str:
    return repo.git("hash-object", "-w", "--stdin", input=data)


def subtree(repo: Repo, lines: list[str]) -> str:
    return repo.git("mktree", input=("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))


def forge_nodes(repo: Repo, lines: list[str], session: str = SESSION) -> str:
    """A forged session commit whose cold_nodes directory is ``lines``."""
    return forge(repo, [f"040000 tree {subtree(repo, lines)}\tcold_nodes"], session)


def raw_tree(repo: Repo, entries: list[tuple[bytes, bytes, str]]) -> str:
    """A tree object written byte for byte (mode, name, sha): names git's mktree refuses."""
    data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    return repo.git("hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=data)


def node_line(step: int, node: dict[str, Any], repo: Repo) -> str:
    return f"100644 blob {blob(repo, node_bytes(node))}\tstep_{step:06d}.json"


def state_files(repo: Repo) -> dict[str, bytes]:
    """Every file under .contextfork/cold (to prove a refused pull wrote nothing)."""
    base = repo.path / ".contextfork" / "cold"
    if not base.exists():
        return {}
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and p.name != ".lock" and "index.sqlite3" not in p.name
    }


def indexed(repo: Repo, session: str = SESSION) -> dict[int, str]:
    """Step id → artifact the index lists (the index file's bytes may move on a checkpoint)."""
    import sqlite3

    db = store(repo, session) / "index.sqlite3"
    if not db.exists():
        return {}
    conn = sqlite3.connect(db)
    try:
        return {
            int(r[0]): str(r[1]) for r in conn.execute("SELECT step_id, artifact_sha256 FROM nodes")
        }
    finally:
        conn.close()
