"""core.autocrlf=true in the user's config: contextfork sees the tree as git status does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, cli, git, make_repo


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
    res = cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["applied"]["exact"]
    assert (clone / "t.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


@pytest.mark.parametrize("how", ["gitattributes-text-auto", "autocrlf-true"])
def test_resume_right_after_export_reports_no_drift_for_an_untracked_crlf_file(
    tmp_path: Path, how: str
) -> None:
    """git normalizes the untracked file when it computes the exported tree; the tree rebuilt from
    the package must go through the same conversion, or every such file shows as changed."""
    files: dict[str, str | bytes] = {"a.txt": "a\n"}
    if how == "gitattributes-text-auto":
        files[".gitattributes"] = "* text=auto\n"
    repo = make_repo(tmp_path / "repo", files=files)
    if how == "autocrlf-true":
        repo.git("config", "core.autocrlf", "true")
    repo.write("un.txt", b"u\r\nv\r\n")
    repo.write("run.sh", "#!/bin/sh\n", mode=0o755)  # the recorded mode still counts
    export(repo.path, ExportOptions(goal="x"))
    res = cli("resume", "--strict", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stdout
    d = res.json()["data"]["drift"]
    assert d["rebuilt_tree"] is not None and d["changed"] == [] and not d["drifted"]
