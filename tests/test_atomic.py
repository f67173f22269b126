from __future__ import annotations

import os
from pathlib import Path

import pytest

from contextfork import atomic


def test_write_bytes_replaces_content_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "d" / "f.json"
    atomic.write_bytes(target, b"old")
    atomic.write_bytes(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.json"]


def test_a_failed_write_keeps_the_old_content_and_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    atomic.write_bytes(target, b"intact")
    with pytest.raises(TypeError):
        atomic.write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"intact"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_publish_dir_is_one_rename_and_never_replaces_a_published_dir(tmp_path: Path) -> None:
    with atomic.staging_dir(tmp_path) as staged:
        atomic.write_into(staged, "a/b.txt", b"x")
        atomic.publish_dir(staged, tmp_path / "pkg")
    assert (tmp_path / "pkg" / "a" / "b.txt").read_bytes() == b"x"
    with atomic.staging_dir(tmp_path) as staged, pytest.raises(FileExistsError):
        atomic.publish_dir(staged, tmp_path / "pkg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def test_write_symlink_replaces_a_link_without_following_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    link = tmp_path / "repo" / "link"
    link.parent.mkdir()
    os.symlink(outside, link)
    atomic.write_symlink(link, "inside.txt")
    assert os.readlink(link) == "inside.txt"
    assert outside.read_text() == "untouched"
