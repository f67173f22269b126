"""core.autocrlf=true in the user's config: contextfork sees the tree as git status does."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, git, make_repo, run_cli


def test_export_and_resume_with_user_autocrlf_true_match_git_status(tmp_path: Path) -> None:
    """core.autocrlf=true in the user's config: a one-line edit is a one-line patch, a fresh clone
    is clean (as `git status` says), and --apply restores the edit there."""
    origin = make_repo(tmp_path / "origin", files={"t.txt": "a\nb\nc\n", "u.txt": "x\ny\n"})
    repo_path = tmp_path / "a"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(origin.path), str(repo_path))
    repo = Repo(repo_path)
    assert (repo_path / "t.txt").read_bytes() == b"a\r\nb\r\nc\r\n"
    repo.write("t.txt", b"a\r\nB\r\nc\r\n")
    pkg = export(repo.path, ExportOptions(goal="x")).path
    patch = (pkg / "git_diff.patch").read_bytes()
    assert b"\r" not in patch and b"\n-b\n+B\n" in patch
    assert b"u.txt" not in patch  # untouched (racily clean after the clone) stays out
    status = json.loads((pkg / "git_status.json").read_text())
    assert status["modified"] == ["t.txt"]
    clone = tmp_path / "b"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(origin.path), str(clone))
    assert git(clone, "status", "--porcelain") == ""
    res = run_cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["applied"]["exact"]
    assert (clone / "t.txt").read_bytes() == b"a\r\nB\r\nc\r\n"
