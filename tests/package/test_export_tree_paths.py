"""Export computes the work-tree tree SHA from ``add -A`` of only the names status listed
(issue 15, speed). The oracle is the whole-tree ``add -A`` (``gitstate.worktree_tree_sha``): a
different walk, so a name the listing misses or mangles shows up as a different tree."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from contextfork import gitstate, scratch
from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, git, make_repo


def _exported_tree(repo: Repo) -> str:
    out = export(repo.path, ExportOptions())
    meta = json.loads((out.path / "session_metadata.json").read_text(encoding="utf-8"))
    return str(meta["worktree_tree_sha"])


def _assert_same_tree(repo: Repo) -> str:
    expected = gitstate.worktree_tree_sha(repo.path)
    with pytest.MonkeyPatch.context() as mp:  # export's fallback is the oracle: not allowed here
        mp.setattr(gitstate, "worktree_tree_sha", lambda *_a, **_k: pytest.fail("fell back"))
        recorded = _exported_tree(repo)
    assert recorded == expected
    return recorded


def test_the_tree_of_a_clean_checkout_is_heads_tree(repo: Repo) -> None:
    assert _assert_same_tree(repo) == repo.git("rev-parse", "HEAD^{tree}")


def test_renames_deletions_type_changes_and_partly_staged_files_give_the_full_walk_tree(
    repo: Repo,
) -> None:
    repo.write("a/keep.txt", "keep\n")
    repo.write("a/gone.txt", "gone\n")
    repo.write("a/staged_gone.txt", "x\n")
    repo.write("a/moved.txt", "moved\n" * 20)
    repo.write("a/link_target.txt", "t\n")
    repo.commit_all("more")
    (repo.path / "b").mkdir()
    repo.git("mv", "a/moved.txt", "b/moved_here.txt")  # staged rename
    repo.git("rm", "-q", "a/staged_gone.txt")
    (repo.path / "a" / "gone.txt").unlink()  # unstaged deletion
    repo.write("a/keep.txt", "staged\n")
    repo.git("add", "a/keep.txt")
    repo.write("a/keep.txt", "staged\nand unstaged on top\n")  # partly staged
    (repo.path / "a" / "link_target.txt").unlink()
    os.symlink("keep.txt", repo.path / "a" / "link_target.txt")  # file -> symlink
    repo.write("new/deep/dir/file.txt", "untracked\n")
    _assert_same_tree(repo)


@pytest.mark.parametrize(
    "name",
    ["star*.txt", "q?.txt", "[br].txt", ":(exclude)magic", "-dash", "sp ace.txt", "tab\there",
     "new\nline", "ünï.txt", "back\\slash"],
)  # fmt: skip
def test_names_with_pathspec_magic_and_odd_bytes_are_staged_literally(
    repo: Repo, name: str
) -> None:
    repo.write(name, "literal\n")
    repo.write("star-other.txt", "a glob would catch me too\n")
    repo.write(".hidden", "x\n")
    _assert_same_tree(repo)


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses names that are not UTF-8")
def test_a_name_that_is_not_utf8_is_in_the_tree(repo: Repo) -> None:
    (repo.path / os.fsdecode(b"bad-\xff-name.txt")).write_bytes(b"x\n")
    _assert_same_tree(repo)


def test_an_unmerged_path_and_a_nested_repository_give_the_full_walk_tree(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("c.txt", "base\n")
    repo.commit_all("base")
    repo.conflicting_merge("c.txt")
    nested = make_repo(repo.path / "vendor" / "nested")
    git(nested.path, "log", "-1")
    _assert_same_tree(repo)


def test_an_ignored_file_stays_out_of_the_tree(repo: Repo) -> None:
    repo.write(".gitignore", "*.log\n")
    repo.commit_all("ignore")
    repo.write("debug.log", "noise\n")
    repo.write("kept.txt", "kept\n")
    tree = _assert_same_tree(repo)
    assert "debug.log" not in repo.git("ls-tree", "-r", "--name-only", tree)


def test_a_listed_name_that_vanished_leaves_the_tree_like_the_full_walk(repo: Repo) -> None:
    # Between status and the staging of the listed names the user may delete a file: it is
    # simply not in the tree (update-index --remove), as a walk of the whole tree finds.
    repo.write("kept.txt", "kept\n")
    repo.write("tracked.txt", "edited\n")
    job = gitstate.start_worktree_tree(
        repo.path, repo.path / ".git", [b"never-was.txt", b"kept.txt", b"tracked.txt"]
    )
    assert gitstate.finish_worktree_tree(job) == gitstate.worktree_tree_sha(repo.path)
    assert not [p.name for p in (repo.path / ".git").iterdir() if p.name.startswith("contextfork-")]


def test_the_listed_names_are_hashed_without_writing_a_blob(repo: Repo) -> None:
    # Pre-commit speed (issue 27): ``add`` wrote a loose object per changed file into the
    # scratch directory; the names are hashed instead, only trees are written.
    for i in range(30):
        repo.write(f"new/f{i}.txt", f"untracked {i}\n")
    st = gitstate.status(repo.path)
    seen: list[int] = []
    real_remove = scratch.remove_dir

    def count_then_remove(path: str) -> None:
        if "contextfork-objs-" in str(path):
            seen.append(sum(len(files) for _d, _s, files in os.walk(path)))
        real_remove(path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scratch, "remove_dir", count_then_remove)
        job = gitstate.start_worktree_tree(repo.path, repo.path / ".git", st.worktree_paths)
        tree = gitstate.finish_worktree_tree(job)
    assert tree == gitstate.worktree_tree_sha(repo.path)
    assert seen and seen[0] < 5, seen  # the trees of new/ and the top, never the 30 blobs
