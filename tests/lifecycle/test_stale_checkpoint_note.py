"""A checkpoint note names the checkpoint taken for that commit, never an older one."""

from __future__ import annotations

import shutil
import subprocess

from contextfork import layout
from contextfork.lifecycle import githooks
from tests.helpers import Repo, clean_env


def _git_commit(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", *args], cwd=repo.path, env=clean_env(),
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_a_failed_checkpoint_never_lets_an_older_pending_note_reach_the_next_commit(
    repo: Repo,
) -> None:
    githooks.install(repo.path)
    repo.write("f.txt", "one\n")
    repo.git("add", "f.txt")
    aborted = _git_commit(repo, "-m", "")  # pre-commit ran, then git aborts: empty message
    assert aborted.returncode != 0
    pending = layout.pending_note(repo.path)
    assert pending.is_file()
    packages = repo.path / ".contextfork" / "packages"
    shutil.rmtree(packages)
    packages.write_text("not a directory\n")  # the next checkpoint fails (fail-open)
    done = _git_commit(repo, "-m", "real")
    assert done.returncode == 0, done.stderr
    assert "checkpoint" in done.stderr  # the failure was reported in one line
    note = repo.git("notes", "--ref=contextfork", "show", "HEAD", check=False)
    assert githooks.NOTE_KEY not in note


def test_a_no_verify_commit_after_an_aborted_one_gets_no_note(repo: Repo) -> None:
    """pre-commit ran for an attempt git then aborted; the next commit skips pre-commit
    (--no-verify) but post-commit still runs: the aborted attempt's note must not reach it."""
    githooks.install(repo.path)
    repo.write("f.txt", "one\n")
    repo.git("add", "f.txt")
    aborted = _git_commit(repo, "-m", "")
    assert aborted.returncode != 0
    assert (layout.pending_note(repo.path)).is_file()
    done = _git_commit(repo, "--no-verify", "-m", "real")
    assert done.returncode == 0, done.stderr
    note = repo.git("notes", "--ref=contextfork", "show", "HEAD", check=False)
    assert githooks.NOTE_KEY not in note
    assert not (layout.pending_note(repo.path)).exists()


def test_the_python_post_commit_drops_a_note_taken_for_another_tree(repo: Repo) -> None:
    """The hook-manager path (`contextfork git-hook post-commit`) binds the note to the tree."""
    repo.write("f.txt", "one\n")
    repo.git("add", "f.txt")
    githooks.pre_commit(repo.path)  # a checkpoint for an attempt that never became a commit
    repo.write("f.txt", "two\n")
    repo.commit_all("other content")
    assert githooks.post_commit(repo.path) is None
    assert githooks.NOTE_KEY not in repo.git("notes", "--ref=contextfork", "show", "HEAD", check=False)


def test_a_normal_commit_still_gets_its_own_note(repo: Repo) -> None:
    githooks.install(repo.path)
    repo.write("f.txt", "one\n")
    repo.git("add", "f.txt")
    done = _git_commit(repo, "-m", "first")
    assert done.returncode == 0, done.stderr
    assert githooks.NOTE_KEY in repo.git("notes", "--ref=contextfork", "show", "HEAD")
    repo.write("f.txt", "two\n")
    done = _git_commit(repo, "-a", "-m", "second")  # git gives hooks a temporary index here
    assert done.returncode == 0, done.stderr
    assert githooks.NOTE_KEY in repo.git("notes", "--ref=contextfork", "show", "HEAD")
