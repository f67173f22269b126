"""File names with a newline in them."""

from __future__ import annotations

from pathlib import Path

from contextfork.package.export import ExportOptions, export
from contextfork.resume.api import resume
from tests.helpers import Repo, git


def test_resume_compares_untracked_files_with_a_newline_in_their_name(repo: Repo) -> None:
    repo.write("new\nline.txt", "x\n")
    repo.write("plain.txt", "y\n")
    export(repo.path, ExportOptions(goal="x"))
    d = resume(repo.path, None, mark=False).data["drift"]
    assert d["rebuilt_tree"] is not None, d["notes"]
    assert not d["drifted"] and d["notes"] == []


def test_resume_apply_restores_an_untracked_file_with_a_newline_in_its_name(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("new\nline.txt", "x\n")
    pkg = export(repo.path, ExportOptions(goal="x")).path
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    res = resume(clone, str(pkg), apply=True)
    assert res.exit_code == 0, res.problems
    assert res.data["applied"]["exact"] and not res.data["drift"]["drifted"]
    assert (clone / "new\nline.txt").read_bytes() == b"x\n"
