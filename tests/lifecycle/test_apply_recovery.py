"""resume --apply is recoverable: a kill -9 between its phases leaves a journal, and a re-run
finishes the restore (or --rollback undoes it). The index ends as it was exported, and a
restore that is not exact exits 1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env, cli, git, make_repo
from tests.lifecycle.conftest import meta_of
from tests.package.conftest import tree_sha_of

JOURNAL = Path(".contextfork") / "apply-journal"


def _status(path: Path) -> str:
    """Staged and unstaged state of every tracked path (untracked files shown too)."""
    return git(path, "status", "--porcelain=v1", "--untracked-files=all", "--no-renames")


def _work_repo(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "repo", files={
        "staged.txt": "s0\n", "unstaged.txt": "u0\n", "both.txt": "b0\n", "gone.txt": "g\n",
        "keep.txt": "k\n",
    })  # fmt: skip
    repo.write("staged.txt", "s1\n")
    repo.git("add", "staged.txt")
    repo.write("unstaged.txt", "u1\n")
    repo.write("both.txt", "b1\n")
    repo.git("add", "both.txt")
    repo.write("both.txt", "b2\n")
    repo.write("added.txt", "new and staged\n")
    repo.git("add", "added.txt")
    (repo.path / "gone.txt").unlink()
    for i in range(5):
        repo.write(f"notes/u{i}.txt", f"untracked {i}\n")
    return repo


def _clone(repo: Repo, tmp_path: Path, name: str = "clone") -> Path:
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    return clone


def _apply(clone: Path, pkg: Path, *extra: str, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_env({"CONTEXTFORK_TEST_KILL_AT": kill_at} if kill_at else None)
    return subprocess.run(
        [sys.executable, "-m", "contextfork", "resume", str(pkg), "--apply", "--no-mark-consumed", *extra],
        cwd=clone, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_resume_apply_keeps_staged_changes_staged_and_unstaged_ones_unstaged(tmp_path: Path) -> None:
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    res = _apply(clone, pkg)
    assert res.returncode == 0, res.stderr
    assert tree_sha_of(clone) == meta_of(pkg)["worktree_tree_sha"]
    assert _status(clone) == _status(repo.path)
    assert git(clone, "diff", "--cached", "--binary") == git(repo.path, "diff", "--cached", "--binary")


def test_resume_apply_exits_1_when_the_restored_tree_is_not_exact(repo: Repo, tmp_path: Path) -> None:
    import os

    os.symlink("/etc/passwd", repo.path / "escape-link")  # never restored: points outside
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    res = cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 1, res.stdout
    assert res.json()["data"]["applied"]["exact"] is False


@pytest.mark.parametrize("point", ["apply:journaled", "apply:patched", "apply:files"])
def test_a_rerun_finishes_an_apply_killed_between_its_phases(tmp_path: Path, point: str) -> None:
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    killed = _apply(clone, pkg, kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (clone / JOURNAL / "journal.json").is_file()
    brief = cli("resume", str(pkg), "--no-mark-consumed", cwd=clone)
    assert "interrupted `resume --apply`" in brief.stdout + brief.stderr
    if point != "apply:journaled":
        assert _status(clone) != _status(repo.path)  # really half-applied
    done = _apply(clone, pkg)
    assert done.returncode == 0, done.stderr
    assert "interrupted" in done.stdout + done.stderr
    assert tree_sha_of(clone) == meta_of(pkg)["worktree_tree_sha"]
    assert _status(clone) == _status(repo.path)
    assert not (clone / JOURNAL).exists()


@pytest.mark.parametrize("point", ["apply:patched", "apply:files"])
def test_rollback_restores_the_checkout_an_apply_was_killed_on(tmp_path: Path, point: str) -> None:
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    clean_tree = tree_sha_of(clone)
    assert _apply(clone, pkg, kill_at=point).returncode == -signal.SIGKILL
    res = cli("resume", "--rollback", "--json", cwd=clone)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["data"]["rolled_back"]
    assert _status(clone) == ""
    assert tree_sha_of(clone) == clean_tree
    assert not (clone / "notes").exists()
    assert not (clone / JOURNAL).exists()


def test_an_interrupted_apply_of_another_package_blocks_a_new_apply(tmp_path: Path) -> None:
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    other = export(repo.path, ExportOptions(goal="y")).path
    clone = _clone(repo, tmp_path)
    assert _apply(clone, pkg, kill_at="apply:patched").returncode == -signal.SIGKILL
    res = _apply(clone, other)
    assert res.returncode == 5
    assert "--rollback" in res.stderr and len(res.stderr.strip().splitlines()) <= 2


def test_a_kill_while_the_journal_is_written_changes_nothing_and_is_swept(tmp_path: Path) -> None:
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    assert _apply(clone, pkg, kill_at="apply:journal-staged").returncode == -signal.SIGKILL
    assert not (clone / JOURNAL).exists() and _status(clone) == ""
    left = [p for p in (clone / ".contextfork").iterdir() if p.name.startswith(".staging-journal-")]
    assert left  # the half-written journal, invisible as a journal
    done = _apply(clone, pkg)
    assert done.returncode == 0, done.stderr
    assert _status(clone) == _status(repo.path)
    assert not [p for p in (clone / ".contextfork").iterdir() if p.name.startswith(".staging-")]


def test_a_rerun_removes_the_temp_file_of_a_snapshot_write_that_was_killed(tmp_path: Path) -> None:
    """A kill inside an atomic write leaves `.<name>.<random>.tmp` beside the target."""
    repo = _work_repo(tmp_path)
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = _clone(repo, tmp_path)
    assert _apply(clone, pkg, kill_at="apply:patched").returncode == -signal.SIGKILL
    (clone / "notes").mkdir()
    (clone / "notes" / ".u0.txt.k1ll3d.tmp").write_text("half a snap")  # what the kill left
    done = _apply(clone, pkg)
    assert done.returncode == 0, done.stderr
    assert _status(clone) == _status(repo.path)
    assert not (clone / "notes" / ".u0.txt.k1ll3d.tmp").exists()
