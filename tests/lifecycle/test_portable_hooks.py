"""The scripts in hooks/ work when copied into a repository's hooks directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, clean_env

HOOKS = Path(__file__).resolve().parents[2] / "hooks"


def test_portable_hook_scripts_checkpoint_each_commit_and_note_it(repo: Repo) -> None:
    for name in ("pre-commit", "post-commit"):
        dest = repo.path / ".git" / "hooks" / name
        shutil.copy(HOOKS / name, dest)
        assert os.access(dest, os.X_OK)
    repo.write("src/app.py", "def main():\n    return 42\n")
    repo.git("add", "-A")
    env = clean_env({"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "change"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    pkgs = list((repo.path / ".contextfork" / "packages").iterdir())
    assert [p for p in pkgs if p.is_dir()], "no checkpoint package written"
    note = repo.git("notes", "--ref=refs/notes/contextfork", "show", "HEAD")
    assert any(p.name in note for p in pkgs)


def test_portable_hook_is_fail_open_when_contextfork_is_missing(repo: Repo) -> None:
    shutil.copy(HOOKS / "pre-commit", repo.path / ".git" / "hooks" / "pre-commit")
    repo.write("x.txt", "x\n")
    repo.git("add", "-A")
    env = clean_env({"PATH": "/usr/bin:/bin"})
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "x"], cwd=repo.path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0 and "not on PATH" in proc.stderr
