"""A killed export leaves a staging directory and a temporary index; the next run cleans them,
but never the files of an export still running (live owner, fresh)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.helpers import Repo, clean_env, run_cli


def _leftovers(repo: Repo) -> tuple[list[str], list[str]]:
    pk = repo.path / ".contextfork" / "packages"
    staging = sorted(p.name for p in pk.iterdir() if p.name.startswith(".staging-")) if pk.is_dir() else []
    gdir = repo.path / ".git"
    temps = sorted(p.name for p in gdir.iterdir() if p.name.startswith("contextfork-"))
    return staging, temps


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_export_leaves_staging_that_the_next_export_removes(repo: Repo) -> None:
    repo.write("notes.txt", "untracked\n")
    proc = subprocess.run(
        [sys.executable, "-m", "contextfork", "export", "--goal", "x"],
        cwd=repo.path,
        # the main thread waits with its staging directory while the tree job, holding its
        # temporary index and objects, kills the process
        env=clean_env({"CONTEXTFORK_TEST_KILL_AT": "worktree:written",
                       "CONTEXTFORK_TEST_PAUSE_AT": "export:staged", "CONTEXTFORK_TEST_PAUSE_S": "30"}),
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL
    staging, temps = _leftovers(repo)
    assert staging and temps  # the kill really left both behind
    res = run_cli("export", "--goal", "y", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert _leftovers(repo) == ([], [])


def test_cleanup_spares_a_live_fresh_export_and_removes_old_or_orphaned_ones(repo: Repo) -> None:
    pk = repo.path / ".contextfork" / "packages"
    pk.mkdir(parents=True)
    gdir = repo.path / ".git"
    live = pk / f".staging-{os.getpid()}-live"  # this test process is alive: a running export
    dead = pk / f".staging-{_dead_pid()}-dead"
    old = pk / f".staging-{os.getpid()}-old"
    legacy_old = pk / ".staging-abc123"
    for d in (live, dead, old, legacy_old):
        d.mkdir()
        (d / "handoff.json").write_text("{}")
    live_idx = gdir / f"contextfork-index-{os.getpid()}-live"
    dead_idx = gdir / f"contextfork-index-{_dead_pid()}-dead"
    for f in (live_idx, dead_idx):
        f.write_bytes(b"DIRC")
    hour_ago = time.time() - 3 * 3600
    for p in (old, legacy_old):
        os.utime(p, (hour_ago, hour_ago))
    res = run_cli("export", "--goal", "x", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert live.is_dir() and live_idx.is_file()
    assert not dead.exists() and not old.exists() and not legacy_old.exists()
    assert not dead_idx.exists()


def test_a_live_exports_temp_index_copied_from_an_old_index_is_not_swept(repo: Repo) -> None:
    # The temporary index keeps the real index's mtime (git's racy-entry check); an index last
    # written hours ago made a live export's copy look hours old, and the sweep that runs while
    # git reads it removed it (add -A then hashed every file: 5x slower on the bench repo).
    from contextfork import gitstate

    gdir = repo.path / ".git"
    live_idx = gdir / f"contextfork-index-{os.getpid()}-copy"
    live_idx.write_bytes((gdir / "index").read_bytes())
    hours_ago = time.time() - 3 * 3600
    os.utime(live_idx, (hours_ago, hours_ago))
    assert gitstate.sweep_stale_temps(gdir) == []
    assert live_idx.is_file()
