"""A checkpoint note names the checkpoint taken for that commit, never an older one."""

from __future__ import annotations

import shutil
import subprocess

from contextfork import githooks
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
    pending = repo.path / ".contextfork" / githooks.PENDING
    assert pending.is_file()
    packages = repo.path / ".contextfork" / "packages"
    shutil.rmtree(packages)
    packages.write_text("not a directory\n")  # the next checkpoint fails (fail-open)
    done = _git_commit(repo, "-m", "real")
    assert done.returncode == 0, done.stderr
    assert "checkpoint" in done.stderr  # the failure was reported in one line
    note = repo.git("notes", "--ref=contextfork", "show", "HEAD", check=False)
    assert githooks.NOTE_KEY not in note
