"""Export leaves the user's object store alone (issue 27 item 4).

The work-tree tree id is computed in a throw-away object directory, and the untracked files
the package does not capture (over the per-file or total cap) are hashed without being stored;
their ids are kept with their stat data in ``.git/contextfork-held-index`` so an unchanged file
is not read again. The recorded tree id stays what resume checks: a whole-tree ``add -A``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from contextfork import gitstate
from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env, make_repo


def _objects(repo: Repo) -> dict[str, int]:
    """Every file under .git/objects with its size."""
    top = repo.path / ".git" / "objects"
    return {str(p.relative_to(top)): p.stat().st_size for p in top.rglob("*") if p.is_file()}


def _recorded_tree(out_path: Path) -> str:
    meta = json.loads((out_path / "session_metadata.json").read_text(encoding="utf-8"))
    return str(meta["worktree_tree_sha"])


def _manifest(out_path: Path) -> dict[str, dict[str, object]]:
    um = json.loads((out_path / "untracked_manifest.json").read_text(encoding="utf-8"))
    return {f["path"]: f for f in um["files"]}


def test_an_untracked_file_over_the_cap_adds_no_byte_to_the_object_store(repo: Repo) -> None:
    repo.write("src/app.py", "def main():\n    return 2\n")  # a tracked edit, in the patch
    repo.write("notes.txt", "a small untracked note\n")  # captured
    repo.write("build/big.bin", os.urandom(300_000))  # over the lowered cap
    repo.write("build/second.bin", os.urandom(40_000))  # under the cap, over the total cap
    before = _objects(repo)
    out = export(repo.path, ExportOptions(file_cap=64 << 10, total_cap=30_000))
    assert _objects(repo) == before  # not one object file, not one byte
    files = _manifest(out.path)
    assert files["build/big.bin"]["reason"] == "too_large"
    assert files["build/second.bin"]["reason"] == "total_cap"
    assert files["notes.txt"]["captured"] is True
    # what resume compares: the id of a whole-tree add -A (which does store the blobs)
    assert _recorded_tree(out.path) == gitstate.worktree_tree_sha(repo.path)
    assert not [p for p in (repo.path / ".git").iterdir() if p.name.startswith("contextfork-objs-")]


def test_a_held_out_file_goes_through_gits_conversion_like_add(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    repo.git("config", "core.autocrlf", "true")
    repo.write(".gitattributes", "*.csv text eol=crlf\n")
    repo.commit_all("attributes")
    repo.write("data/big.csv", b"a,b\r\n" * 30_000)  # CRLF that git stores as LF
    out = export(repo.path, ExportOptions(file_cap=10_000))
    assert _manifest(out.path)["data/big.csv"]["reason"] == "too_large"
    assert _recorded_tree(out.path) == gitstate.worktree_tree_sha(repo.path)


def test_an_unchanged_held_out_file_is_not_read_again(repo: Repo) -> None:
    # With core.trustctime off, git trusts inode, mtime and size. Rewriting the file in place
    # with the same size and putting its mtime back makes the stat data unchanged: a tree
    # that still has the first content proves the second export did not hash the file.
    repo.git("config", "core.trustctime", "false")
    big = repo.write("big.bin", b"A" * 200_000)
    then = time.time_ns() - 3600 * 10**9  # well before the held index is written
    os.utime(big, ns=(then, then))
    opts = ExportOptions(file_cap=64 << 10)
    first = _recorded_tree(export(repo.path, opts).path)
    assert (repo.path / ".git" / gitstate.HELD_INDEX).is_file()
    with big.open("r+b") as fh:
        fh.write(b"B")
    os.utime(big, ns=(then, then))
    assert _recorded_tree(export(repo.path, opts).path) == first
    big.write_bytes(b"C" * 200_001)  # a real change is seen
    assert _recorded_tree(export(repo.path, opts).path) == gitstate.worktree_tree_sha(repo.path)


def test_a_name_that_is_no_longer_held_out_leaves_the_held_index(repo: Repo) -> None:
    repo.write("big.bin", b"x" * 100_000)
    export(repo.path, ExportOptions(file_cap=64 << 10))
    repo.write("big.bin", b"small now\n")
    out = export(repo.path, ExportOptions(file_cap=64 << 10))
    assert _manifest(out.path)["big.bin"]["captured"] is True
    assert _held_names(repo) == []
    assert _recorded_tree(out.path) == gitstate.worktree_tree_sha(repo.path)


def _held_names(repo: Repo) -> list[str]:
    env = clean_env({"GIT_INDEX_FILE": str(repo.path / ".git" / gitstate.HELD_INDEX)})
    proc = subprocess.run(["git", "ls-files"], cwd=repo.path, env=env, capture_output=True, check=True)
    return proc.stdout.decode().split()


def test_the_whole_tree_walk_holds_out_too(repo: Repo) -> None:
    # export's fallback when a listed name vanished since status
    repo.write("big.bin", os.urandom(100_000))
    repo.write("keep.txt", "kept\n")
    before = _objects(repo)
    sha = gitstate.worktree_tree_sha(repo.path, [b"big.bin"], scratch=True)
    assert _objects(repo) == before
    assert sha == gitstate.worktree_tree_sha(repo.path)


def test_a_copied_repository_is_refreshed_by_status_before_the_diff_starts(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After cp -r every index entry's stat data is stale: status and diff side by side would
    # each hash every tracked file. The diff follows status (which writes the refreshed index);
    # git's own trace says when each process started and ended.
    for i in range(20):
        repo.write(f"pkg/m{i}.py", f"x = {i}\n")
    repo.commit_all("more")
    repo.write("pkg/m0.py", "x = -1\n")  # a change, so that a diff runs
    copy = tmp_path / "copy"
    shutil.copytree(repo.path, copy, symlinks=True)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    export(copy, ExportOptions())
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    argv: dict[str, list[str]] = {}
    began: dict[str, float] = {}
    ended: dict[str, float] = {}
    for line in trace.read_text(encoding="utf-8").splitlines():
        ev = json.loads(line)
        when = datetime.fromisoformat(ev["time"].replace("Z", "+00:00")).timestamp()
        if ev["event"] == "start":
            argv[ev["sid"]], began[ev["sid"]] = ev["argv"], when
        elif ev["event"] == "exit":
            ended[ev["sid"]] = when
    status = [s for s, a in argv.items() if "status" in a]
    diff = [s for s, a in argv.items() if "diff" in a and "--cached" not in a]
    assert len(status) == 1 and len(diff) == 1
    assert began[diff[0]] >= ended[status[0]]


def test_resume_and_drift_walks_store_trees_but_not_a_big_untracked_file(repo: Repo) -> None:
    # worktree_tree_sha (resume's before/after, drift's live tree) holds out untracked files
    # over 1 MiB; it keeps the trees, which drift diffs afterwards.
    repo.write("big.bin", os.urandom((1 << 20) + 1))
    repo.write("small.txt", "small\n")
    before = set(_objects(repo))
    tree = gitstate.worktree_tree_sha(repo.path)
    added = [name.replace("/", "") for name in set(_objects(repo)) - before]
    kinds = {repo.git("cat-file", "-t", sha) for sha in added}
    assert kinds == {"tree", "blob"}  # the tree and small.txt's blob
    big_id = repo.git("hash-object", "big.bin")
    assert big_id not in added
    assert f"blob {big_id}\tbig.bin" in repo.git("ls-tree", tree)
