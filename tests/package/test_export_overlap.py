"""Export overlaps its own work with git's and with the device (issue 15): the outputs must stay
whole and a failed write must still stop the publish."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfork import atomic
from contextfork.package.export import ExportOptions, export
from contextfork.package.validate import validate_package
from tests.helpers import Repo


def test_a_patch_far_larger_than_a_pipe_is_captured_whole(repo: Repo) -> None:
    lines = "".join(f"line {i} of a long file\n" for i in range(40_000))  # ~1 MB of + lines
    repo.write("big.txt", lines)
    repo.git("add", "big.txt")  # staged too: both patches are large
    repo.write("notes/new.txt", "untracked\n")
    out = export(repo.path, ExportOptions())
    patch = (out.path / "git_diff.patch").read_bytes()
    assert patch.count(b"\n+line ") == 40_000 and patch.endswith(b"\n")
    assert (out.path / "git_index.patch").read_bytes() == patch  # everything is staged
    assert validate_package(out.path, repo.path).exit_code == 0


def test_a_failed_background_write_stops_the_publish(tmp_path: Path) -> None:
    base = tmp_path / "packages"
    with atomic.staging_dir(base) as staging, atomic.BackgroundWriter(staging) as writer:
        writer.write("untracked/ok.txt", b"fine")
        (staging / "blocker").write_bytes(b"a file where a directory must go")
        writer.write("blocker/inside.txt", b"cannot be written")
        with pytest.raises(OSError):
            atomic.publish_dir(staging, base / "pkg", writer=writer)
    assert not (base / "pkg").exists()


@pytest.mark.parametrize("whole_fs", [False, True], ids=["fsync-each", "one-syncfs"])
def test_background_writes_land_whole_before_the_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_fs: bool
) -> None:
    if whole_fs and atomic._syncfs() is None:
        pytest.skip("no syncfs(2) with error reporting here (Linux >= 5.8)")
    monkeypatch.setattr(atomic, "whole_fs_sync_cheap", lambda: whole_fs)
    flushed: list[Path] = []
    real = atomic.sync_filesystem
    monkeypatch.setattr(atomic, "sync_filesystem", lambda p: (flushed.append(p), real(p))[1])
    base = tmp_path / "packages"
    with atomic.staging_dir(base) as staging, atomic.BackgroundWriter(staging) as writer:
        for i in range(50):
            writer.write(f"untracked/d{i % 5}/f{i}.bin", bytes([i]) * (i * 100))
        synced = writer.wait()
        atomic.publish_dir(staging, base / "pkg", writer=writer)
    # Either every file was fsynced as written, or the staged tree's filesystem was flushed once.
    assert (len(synced), len(flushed)) == ((0, 1) if whole_fs else (50, 0))
    for i in range(50):
        assert (base / "pkg" / f"untracked/d{i % 5}/f{i}.bin").read_bytes() == bytes([i]) * (i * 100)


def test_the_flush_is_decided_once_by_the_writer_not_again_at_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([False, True])  # busy when the writer starts, quiet by the publish
    monkeypatch.setattr(atomic, "whole_fs_sync_cheap", lambda: next(answers))
    flushed: list[Path] = []
    monkeypatch.setattr(atomic, "sync_filesystem", flushed.append)
    base = tmp_path / "packages"
    with atomic.staging_dir(base) as staging, atomic.BackgroundWriter(staging) as writer:
        writer.write("untracked/a.txt", b"a")
        atomic.publish_dir(staging, base / "pkg", writer=writer)
    assert flushed == []  # every file was fsynced as written: no whole-filesystem flush on top
    assert (base / "pkg" / "untracked/a.txt").read_bytes() == b"a"


def test_a_filesystem_busy_with_other_writes_gets_an_fsync_per_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(atomic, "_dirty_bytes", lambda: atomic.WHOLE_FS_DIRTY_LIMIT + 1)
    assert not atomic.whole_fs_sync_cheap()
    monkeypatch.setattr(atomic, "_dirty_bytes", lambda: None)  # no /proc/meminfo
    assert not atomic.whole_fs_sync_cheap()
