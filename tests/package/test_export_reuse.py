"""An export links the untracked snapshots that have not changed since the previous package
instead of writing them again (issue 27: the pre-commit checkpoint's cost). The bytes stay
exact and nothing outside a package is ever linked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from contextfork import atomic
from contextfork.package.export import ExportOptions, export
from contextfork.package.validate import validate_package
from tests.helpers import Repo


def _snap(out_path: os.PathLike[str], rel: str) -> os.stat_result:
    return os.lstat(os.path.join(out_path, "untracked", rel))


def test_an_unchanged_untracked_file_is_linked_and_a_changed_one_written(repo: Repo) -> None:
    repo.write("notes/same.txt", "unchanged\n" * 50)
    repo.write("notes/edited.txt", "first\n")
    first = export(repo.path, ExportOptions())
    repo.write("notes/edited.txt", "second\n")  # same size, other bytes
    repo.write("top.txt", "new\n")
    second = export(repo.path, ExportOptions())
    assert _snap(second.path, "notes/same.txt").st_ino == _snap(first.path, "notes/same.txt").st_ino
    assert _snap(second.path, "notes/edited.txt").st_ino != _snap(first.path, "notes/edited.txt").st_ino
    assert (second.path / "untracked" / "notes" / "edited.txt").read_text() == "second\n"
    assert (first.path / "untracked" / "notes" / "edited.txt").read_text() == "first\n"
    for out in (first, second):
        assert validate_package(out.path, repo.path).errors == []


def test_a_previous_snapshot_that_differs_from_the_file_is_not_linked(repo: Repo) -> None:
    repo.write("a.txt", "real bytes\n")
    first = export(repo.path, ExportOptions())
    # Tampered after publication (same size): the next export compares bytes, not names.
    os.chmod(first.path / "untracked" / "a.txt", 0o644)
    (first.path / "untracked" / "a.txt").write_text("fake bytes\n")
    second = export(repo.path, ExportOptions())
    assert _snap(second.path, "a.txt").st_ino != _snap(first.path, "a.txt").st_ino
    assert (second.path / "untracked" / "a.txt").read_text() == "real bytes\n"


def test_a_symlink_in_the_previous_package_never_links_a_file_outside_it(repo: Repo) -> None:
    repo.write("dir/a.txt", "work tree bytes\n")
    first = export(repo.path, ExportOptions())
    snap_dir = first.path / "untracked" / "dir"
    shutil.rmtree(snap_dir)
    os.symlink(repo.path / "dir", snap_dir)  # now "the same file" is the work tree's own
    second = export(repo.path, ExportOptions())
    work = os.lstat(repo.path / "dir" / "a.txt")
    assert _snap(second.path, "dir/a.txt").st_ino != work.st_ino
    assert work.st_nlink == 1
    assert (second.path / "untracked" / "dir" / "a.txt").read_text() == "work tree bytes\n"


def test_a_package_of_mostly_linked_files_is_fsynced_file_by_file_not_by_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # syncfs waits on every other program's dirty data (up to a second on a busy machine): for
    # the few files a checkpoint writes beside its links, an fsync each is what is waited on.
    monkeypatch.setattr(atomic, "whole_fs_sync_cheap", lambda: True)
    flushed: list[Path] = []
    monkeypatch.setattr(atomic, "sync_filesystem", flushed.append)
    fsynced: list[str] = []
    real = atomic._fsync_path

    def record(path: str) -> None:
        fsynced.append(path)
        real(path)

    monkeypatch.setattr(atomic, "_fsync_path", record)
    old = tmp_path / "packages" / "old"
    for i in range(40):
        (old / "untracked").mkdir(parents=True, exist_ok=True)
        (old / "untracked" / f"f{i}").write_bytes(b"same %d" % i)
    with atomic.staging_dir(tmp_path / "packages") as staging, atomic.BackgroundWriter(staging) as writer:
        for i in range(40):
            assert writer.link(f"untracked/f{i}", old / "untracked" / f"f{i}", b"same %d" % i)
        writer.write("untracked/new.txt", b"new")
        atomic.write_into(staging, "manifest.json", b"{}")
        atomic.publish_dir(staging, tmp_path / "packages" / "pkg", writer=writer)
    assert flushed == []
    assert sorted(os.path.basename(p) for p in fsynced) == ["manifest.json", "new.txt"]
    assert (tmp_path / "packages" / "pkg" / "untracked" / "new.txt").read_bytes() == b"new"
