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
            atomic.publish_dir(staging, base / "pkg", synced=writer.wait())
    assert not (base / "pkg").exists()


def test_background_writes_land_whole_before_the_publish(tmp_path: Path) -> None:
    base = tmp_path / "packages"
    with atomic.staging_dir(base) as staging, atomic.BackgroundWriter(staging) as writer:
        for i in range(50):
            writer.write(f"untracked/d{i % 5}/f{i}.bin", bytes([i]) * (i * 100))
        synced = writer.wait()
        atomic.publish_dir(staging, base / "pkg", synced=synced)
    assert len(synced) == 50
    for i in range(50):
        assert (base / "pkg" / f"untracked/d{i % 5}/f{i}.bin").read_bytes() == bytes([i]) * (i * 100)
