"""resume --apply never writes a snapshot through a symlink, however the patch names it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env, cli, git, make_repo
from tests.lifecycle.conftest import reseal


def _symlink_patch(repo: Repo, name: str, target: str) -> bytes:
    """A patch that creates the symlink ``name`` -> ``target`` against HEAD."""
    link = repo.path / name
    os.symlink(target, link)
    repo.git("add", "--", name)
    patch = subprocess.run(
        ["git", "diff", "--cached", "--binary", "HEAD"],
        cwd=repo.path, env=clean_env(), capture_output=True, check=True,
    ).stdout  # fmt: skip
    repo.git("reset", "-q")
    link.unlink()
    return patch


def test_resume_apply_never_writes_through_a_patch_symlink_with_a_newline_in_its_name(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo")
    name = "ev\nil"
    patch = _symlink_patch(repo, name, str(outside))
    repo.write(f"{name}/payload", "pwned\n")
    pkg = export(repo.path, ExportOptions(goal="x")).path
    (pkg / "git_diff.patch").write_bytes(patch)
    reseal(pkg)
    clone = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    res = cli("validate", str(pkg), "--json", cwd=clone)
    assert res.returncode == 3
    assert any(p["code"] == "unsafe_path" for p in res.json()["problems"])
    res = cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 3
    assert not (outside / "payload").exists()
    assert list(outside.iterdir()) == []


def test_resume_apply_rechecks_symlink_parents_after_the_patch_is_applied(tmp_path: Path) -> None:
    """A rename of a committed symlink shows no symlink mode in the patch; the snapshot below its
    new name must still never be written through it."""
    from contextfork.errors import IntegrityError
    from contextfork.package.models import SessionMetadata, UntrackedManifest
    from contextfork.resume.apply import apply_package

    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo")
    os.symlink(str(outside), repo.path / "L")
    repo.commit_all("a link")
    repo.write("d/payload", "pwned\n")
    pkg = export(repo.path, ExportOptions(goal="x")).path
    rename = b"diff --git a/L b/d\nsimilarity index 100%\nrename from L\nrename to d\n"
    (pkg / "git_diff.patch").write_bytes(rename)
    meta = SessionMetadata.model_validate_json((pkg / "session_metadata.json").read_text())
    um = UntrackedManifest.model_validate_json((pkg / "untracked_manifest.json").read_text())
    clone = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    with pytest.raises(IntegrityError, match="through symlink"):
        apply_package(clone, pkg, meta, um)
    assert not (outside / "payload").exists()


@pytest.mark.parametrize(
    "rename",
    [
        b"diff --git a/L b/d\nsimilarity index 100%\nrename from L\nrename to d\n",
        b"diff --git a/L b/d\nsimilarity index 100%\ncopy from L\ncopy to d\n",
    ],
    ids=["rename", "copy"],
)
def test_validate_flags_a_patch_that_renames_a_committed_symlink_above_a_snapshot(
    tmp_path: Path, rename: bytes
) -> None:
    """`resume --apply` refuses this after the patch; `validate` must say so before anything."""
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo")
    os.symlink(str(outside), repo.path / "L")
    repo.commit_all("a link")
    repo.write("d/payload", "pwned\n")
    pkg = export(repo.path, ExportOptions(goal="x")).path
    (pkg / "git_diff.patch").write_bytes(rename)
    reseal(pkg)
    clone = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    res = cli("validate", str(pkg), "--json", cwd=clone)
    assert res.returncode == 3, res.stdout
    flagged = [p for p in res.json()["problems"] if p["code"] == "unsafe_path"]
    assert flagged and flagged[0]["path"] == "d/payload"
    res = cli("resume", str(pkg), "--apply", "--json", cwd=clone)
    assert res.returncode == 3
    assert not (outside / "payload").exists()
