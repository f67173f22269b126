"""git_index.patch is cut from the work-tree patch where index and work tree agree (issue 15,
speed): it must be, byte for byte, what ``git diff --cached HEAD`` prints. The oracle is git
run directly with the same arguments; export's own fallback (the whole --cached diff) is
disabled, so a shortcut that silently gave up would fail here too. The work-tree patch itself
names only the paths status listed (issue 27): git_diff.patch must be, byte for byte, the
whole-tree ``git diff HEAD`` on the same trees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from contextfork import gitstate
from contextfork.gitstate import staged
from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env


def _oracle(repo: Repo, cached: bool = True) -> bytes:
    """git's own whole-tree diff (--cached, or the work tree's), with the configuration every
    contextfork git call pins."""
    pinned = list(gitstate.core._PINNED)
    proc = subprocess.run(["git", *pinned, *gitstate.diff_args("HEAD", cached=cached)],
                          cwd=repo.path, env=clean_env(), capture_output=True, check=True)  # fmt: skip
    return proc.stdout


def _exported_patches(repo: Repo, allow_fallback: bool = False) -> tuple[bytes, bytes]:
    real = gitstate.diff_patch

    def no_whole_cached(root: Path, base: str, *, cached: bool = False) -> bytes:
        if cached and not allow_fallback:
            pytest.fail("export fell back to the whole --cached diff")
        return real(root, base, cached=cached)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gitstate, "diff_patch", no_whole_cached)
        out = export(repo.path, ExportOptions())
    return (out.path / "git_index.patch").read_bytes(), (out.path / "git_diff.patch").read_bytes()


def _assert_exact(repo: Repo, allow_fallback: bool = False) -> bytes:
    want, want_worktree = _oracle(repo), _oracle(repo, cached=False)
    staged_patch, worktree_patch = _exported_patches(repo, allow_fallback)
    assert staged_patch == want
    assert worktree_patch == want_worktree
    return want


def test_nothing_staged_gives_an_empty_staged_patch(repo: Repo) -> None:
    repo.write("src/app.py", "unstaged only\n")
    assert _assert_exact(repo) == b""


def test_staged_partly_staged_added_deleted_renamed_and_mode_changes_match_git(repo: Repo) -> None:
    for i in range(6):
        repo.write(f"d{i}/f.txt", f"base {i}\n" * 5)
    repo.write("tool.sh", "echo hi\n")
    repo.write("old/name.txt", "rename me\n" * 10)
    repo.write("blob.bin", bytes(range(256)) * 4)
    repo.commit_all("base")
    repo.write("d0/f.txt", "staged\n")
    repo.write("d1/f.txt", "staged\n")
    repo.git("add", "d0/f.txt", "d1/f.txt")
    repo.write("d1/f.txt", "staged\nthen edited\n")  # partly staged
    repo.git("rm", "-q", "d2/f.txt")  # staged deletion
    (repo.path / "d3" / "f.txt").unlink()  # unstaged deletion: not staged
    repo.write("new/added.txt", "added\n")
    repo.write("new/added_then_edited.txt", "v1\n")
    repo.write("new/added_then_removed.txt", "gone soon\n")
    repo.git("add", "new")
    repo.write("new/added_then_edited.txt", "v2\n")
    (repo.path / "new" / "added_then_removed.txt").unlink()
    (repo.path / "d4").mkdir(exist_ok=True)
    repo.git("mv", "old/name.txt", "d4/renamed.txt")
    os.chmod(repo.path / "tool.sh", 0o755)
    repo.git("add", "tool.sh")
    repo.write("blob.bin", bytes(reversed(range(256))) * 4)
    repo.git("add", "blob.bin")
    repo.write("d5/intent.txt", "intent to add: not staged content\n")
    repo.git("add", "-N", "d5/intent.txt")
    assert _assert_exact(repo)


@pytest.mark.parametrize(
    "names",
    [["a.txt", "a/b.txt", "a-b.txt", "a b.txt"], ["tab\there", 'quote"d', "back\\slash",
     "new\nline", "ünï.txt", "-dash", "star*.txt", "[ab].txt"]],
    ids=["sort-order", "quoted-names"],
)  # fmt: skip
def test_awkward_names_are_cut_and_ordered_as_git_orders_them(repo: Repo, names: list[str]) -> None:
    for n in names:
        repo.write(n, f"base {n}\n")
    repo.commit_all("base")
    for i, n in enumerate(names):
        repo.write(n, f"staged {n}\n")
        repo.git("add", "--", n)
        if i % 2:
            repo.write(n, f"staged {n}\nplus an unstaged line\n")
    assert _assert_exact(repo)


def test_a_directory_replaced_by_a_file_matches_git(repo: Repo) -> None:
    repo.write("x/y.txt", "in a dir\n")
    repo.write("x.txt", "beside\n")
    repo.commit_all("base")
    repo.git("rm", "-q", "-r", "x")
    repo.write("x", "now a file\n")
    repo.git("add", "x")
    assert _assert_exact(repo)


def test_a_staged_symlink_matches_git(repo: Repo) -> None:
    os.symlink("README.md", repo.path / "link")
    repo.git("add", "link")
    assert _assert_exact(repo)


def test_an_unmerged_path_uses_gits_whole_cached_diff(repo: Repo) -> None:
    repo.write("c.txt", "base\n")
    repo.commit_all("base")
    repo.conflicting_merge("c.txt")
    repo.write("other.txt", "staged beside the conflict\n")
    repo.git("add", "other.txt")
    assert staged.plan(gitstate.status(repo.path)) is None
    _assert_exact(repo, allow_fallback=True)


def test_a_file_edited_after_status_is_not_taken_from_the_work_tree(repo: Repo) -> None:
    repo.write("src/app.py", "staged\n")
    repo.git("add", "src/app.py")
    plan = staged.plan(gitstate.status(repo.path))  # status: index and work tree agree
    assert plan is not None and plan.reuse
    repo.write("src/app.py", "edited while export ran\n")  # then the user types
    worktree_patch = gitstate.diff_patch(repo.path, "HEAD")
    assert staged.assemble(plan, worktree_patch, b"") is None  # export then asks git, whole


def test_section_headers_round_trip_through_gits_quoting() -> None:
    assert staged.section_path(b"diff --git a/plain name b/plain name") == b"plain name"
    assert staged.section_path(b'diff --git "a/t\\tab\\"q\\\\\\303\\274" "b/t\\tab\\"q\\\\\\303\\274"') == (
        b't\tab"q\\\xc3\xbc'
    )
    assert staged.section_path(b"diff --git a/x b/y") is None  # a rename: never with --no-renames
    assert staged.section_path(b'diff --git "a/unterminated') is None


def test_names_that_look_like_pathspec_magic_are_diffed_literally(repo: Repo) -> None:
    # The work-tree diff names status's paths: ":!x" would otherwise exclude, "*" glob.
    names = [":!neg.txt", ":(top)magic.txt", "star*.txt", "starry.txt"]
    for n in names:
        repo.write(n, f"base {n}\n")
    repo.commit_all("base")
    for n in names[:3]:
        repo.write(n, f"edited {n}\n")
    assert _oracle(repo, cached=False).count(b"diff --git ") == 3
    _assert_exact(repo)
