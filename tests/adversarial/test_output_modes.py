"""Files the user names get the mode any program's output gets; contextfork's own state stays
private (issue 22 #9: ``replay --plot`` always wrote 0600).

A real ``contextfork replay --plot`` process under a real umask (set by the shell that execs
it), so the mode is what the kernel gave the file, not what a test helper assumed.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import cc_fixture
from tests.helpers import clean_env, make_repo


def _run_under_umask(umask: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = f'umask {umask} && exec "$0" -m contextfork "$@"'
    return subprocess.run(["/bin/sh", "-c", script, sys.executable, *args], cwd=cwd,
                          env=clean_env(), capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("umask", "want"), [("022", 0o644), ("077", 0o600), ("002", 0o664)])
@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_replay_plot_is_created_with_the_mode_the_umask_gives(
    tmp_path: Path, umask: str, want: int, suffix: str
) -> None:
    transcript = cc_fixture.write(tmp_path / "s.jsonl", tmp_path)
    plot = tmp_path / "out" / f"bill{suffix}"
    plot.parent.mkdir()
    res = _run_under_umask(umask, tmp_path, "replay", "--transcript", str(transcript),
                           "--policy", "base", "--plot", str(plot))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert plot.read_text(encoding="utf-8").lstrip().startswith("<")
    assert _mode(plot) == want, f"umask {umask}: mode {_mode(plot):o}, want {want:o}"
    assert not [p.name for p in plot.parent.iterdir() if p.name != plot.name]  # no temp left


def test_replay_plot_over_an_existing_file_keeps_that_files_mode(tmp_path: Path) -> None:
    transcript = cc_fixture.write(tmp_path / "s.jsonl", tmp_path)
    plot = tmp_path / "bill.svg"
    plot.write_text("old\n")
    os.chmod(plot, 0o640)
    res = _run_under_umask("077", tmp_path, "replay", "--transcript", str(transcript),
                           "--policy", "base", "--plot", str(plot))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert plot.read_text(encoding="utf-8") != "old\n"
    assert _mode(plot) == 0o640


def test_the_cold_store_and_packages_keep_their_modes_under_a_loose_umask(tmp_path: Path) -> None:
    """Store state files stay 0600 (private, as before); package files follow the umask (as
    before): only files the user names changed."""
    repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "s.jsonl", repo.path)
    res = _run_under_umask("022", repo.path, "fold", "session", "--transcript", str(transcript),
                           "--session", "m")  # fmt: skip
    assert res.returncode == 0, res.stderr
    store = repo.path / ".contextfork" / "cold" / "m"
    for name in ("hydration_policy.json", "recall_index.json"):
        assert _mode(store / name) == 0o600, name
    nodes = sorted((store / "cold_nodes").iterdir())
    assert nodes and all(_mode(n) == 0o600 for n in nodes)
    res = _run_under_umask("022", repo.path, "export", "--goal", "modes", "--json")
    assert res.returncode == 0, res.stderr
    pkgs = [p for p in (repo.path / ".contextfork" / "packages").iterdir() if p.is_dir()]
    assert len(pkgs) == 1
    assert _mode(pkgs[0] / "manifest.json") == 0o644
