"""Our git hooks next to the pre-commit framework (and other chainers) never call themselves.

`pre-commit install` moves a hook it does not own to `<hook>.legacy` and runs it first; so do
we. Installed in either order, the two used to chain into themselves: our hook kept as
`pre-commit.legacy` ran `$here/pre-commit.legacy` — itself — until the machine could not fork;
pre-commit's script kept as our legacy found *itself* as its own legacy and stopped with "bug:
pre-commit's script is installed in migration mode". Every commit failed.

Real git, the real pre-commit framework (`repo: local`, `language: system`: no network). Each
commit runs in its own session and is killed when it spawns more than a few dozen processes, so
a regression fails the test instead of exhausting the machine's process table.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from contextfork.lifecycle import githooks
from contextfork.package import store
from tests.helpers import Repo, clean_env, cli

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
    "pre-commit"
)
needs_pre_commit = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")
MAX_PROCS = 40
PC_MARK = "framework-hook-ran"

# What `contextfork hooks install --git` wrote before the recursion guard (0.1.0): it chains
# `$here/pre-commit.legacy` whatever its own name is.
OLD_HOOK = f"""#!/bin/sh
# {githooks.MARKER}
here=$(dirname -- "$0")
if [ -x "$here/pre-commit.legacy" ]; then
    "$here/pre-commit.legacy" "$@" || exit $?
fi
{sys.executable} -m contextfork.githooks pre-commit || echo "skipped" >&2
exit 0
"""


def _session_procs(sid: int) -> int:
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                n += os.getsid(int(d)) == sid
    return n


def bounded(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``cmd``; kill its whole session if it forks more than MAX_PROCS processes."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, start_new_session=True,
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        start = time.monotonic()
        while proc.poll() is None:
            if _session_procs(proc.pid) > MAX_PROCS or time.monotonic() - start > 300:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return -1, "KILLED: the hook chain kept forking (recursion)"
            time.sleep(0.05)
        out.seek(0)
        return proc.returncode, out.read().decode("utf-8", "replace")


def _commit(repo: Repo, msg: str) -> tuple[int, str]:
    repo.write("f.txt", f"{msg}\n")
    repo.git("add", "f.txt")
    return bounded(["git", "commit", "-m", msg], repo.path, clean_env())


def _hooks(repo: Repo) -> Path:
    return repo.path / ".git" / "hooks"


def _pc(repo: Repo, tmp_path: Path, *args: str) -> None:
    assert PRE_COMMIT
    env = clean_env({"PRE_COMMIT_HOME": str(tmp_path / "pc-home")})
    res = subprocess.run([PRE_COMMIT, *args], cwd=repo.path, env=env, capture_output=True,
                         text=True, check=False, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


def _framework(repo: Repo) -> None:
    repo.write(".pre-commit-config.yaml", "repos:\n  - repo: local\n    hooks:\n"
               "      - id: mark\n        name: mark\n"
               f"        entry: sh -c 'echo {PC_MARK}'\n        language: system\n"
               "        always_run: true\n        pass_filenames: false\n"
               "        verbose: true\n")  # fmt: skip
    repo.commit_all("pre-commit config")


def _install(repo: Repo) -> None:
    res = cli("hooks", "install", "--git", cwd=repo.path)
    assert res.returncode == 0, res.stderr


def _assert_both_ran(repo: Repo, rc: int, out: str, checkpoints: int = 1) -> None:
    assert rc == 0, out
    assert PC_MARK in out
    assert len(store.list_packages(repo.path)) == checkpoints


@needs_pre_commit
def test_pre_commit_install_after_ours_does_not_recurse(repo: Repo, tmp_path: Path) -> None:
    _framework(repo)
    _pc(repo, tmp_path, "install")
    _install(repo)
    _pc(repo, tmp_path, "install")  # moves our hook to pre-commit.legacy
    assert githooks.is_ours(_hooks(repo) / "pre-commit.legacy")
    rc, out = _commit(repo, "after pre-commit reinstall")
    _assert_both_ran(repo, rc, out)
    assert "contextfork: checkpoint" in out
    refs = store.list_packages(repo.path)
    assert refs[0].package_id in repo.git("notes", "--ref=contextfork", "show", "HEAD")


@needs_pre_commit
def test_installing_ours_over_the_framework_keeps_both_running(repo: Repo, tmp_path: Path) -> None:
    _framework(repo)
    _pc(repo, tmp_path, "install")
    framework_script = (_hooks(repo) / "pre-commit").read_bytes()
    res = cli("hooks", "install", "--git", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    # the framework keeps the hook; ours is its legacy hook, which it runs first
    assert (_hooks(repo) / "pre-commit").read_bytes() == framework_script
    assert githooks.is_ours(_hooks(repo) / "pre-commit.legacy")
    placed = {h["hook"]: h["path"] for h in res.json()["data"]["hooks"]}
    assert placed["pre-commit"] == str(_hooks(repo) / "pre-commit.legacy")
    rc, out = _commit(repo, "framework first")
    _assert_both_ran(repo, rc, out)
    # and pre-commit's own reinstall keeps that arrangement working
    _pc(repo, tmp_path, "install")
    rc, out = _commit(repo, "framework reinstalled")
    _assert_both_ran(repo, rc, out, checkpoints=2)


@needs_pre_commit
def test_install_and_uninstall_repair_the_state_an_older_version_left(
    repo: Repo, tmp_path: Path
) -> None:
    _framework(repo)
    _pc(repo, tmp_path, "install")
    legacy = _hooks(repo) / "pre-commit.legacy"
    legacy.write_text(OLD_HOOK)  # what 0.1.0 + `pre-commit install` left: ours, unguarded
    legacy.chmod(0o755)
    _install(repo)  # used to refuse: "a foreign hook and pre-commit.legacy already exists"
    rc, out = _commit(repo, "repaired by install")
    _assert_both_ran(repo, rc, out)
    legacy.write_text(OLD_HOOK)
    res = cli("hooks", "uninstall", "--git", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert not legacy.exists() and not (_hooks(repo) / "post-commit").exists()
    rc, out = _commit(repo, "framework alone")
    _assert_both_ran(repo, rc, out)  # the one checkpoint from before; none added


@needs_pre_commit
def test_install_repairs_the_framework_script_kept_as_our_legacy(
    repo: Repo, tmp_path: Path
) -> None:
    """0.1.0 installed over pre-commit's script by moving it to .legacy, where it finds itself
    as its own legacy hook and stops every commit."""
    _framework(repo)
    _pc(repo, tmp_path, "install")
    hooks = _hooks(repo)
    framework_script = (hooks / "pre-commit").read_bytes()
    os.rename(hooks / "pre-commit", hooks / "pre-commit.legacy")
    (hooks / "pre-commit").write_text(OLD_HOOK)
    (hooks / "pre-commit").chmod(0o755)
    _install(repo)
    assert (hooks / "pre-commit").read_bytes() == framework_script
    assert githooks.is_ours(hooks / "pre-commit.legacy")
    rc, out = _commit(repo, "repaired")
    _assert_both_ran(repo, rc, out)


@needs_pre_commit
def test_uninstall_leaves_the_framework_hook_alone(repo: Repo, tmp_path: Path) -> None:
    _framework(repo)
    _pc(repo, tmp_path, "install")
    framework_script = (_hooks(repo) / "pre-commit").read_bytes()
    _install(repo)
    res = cli("hooks", "uninstall", "--git", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert (_hooks(repo) / "pre-commit").read_bytes() == framework_script
    assert not (_hooks(repo) / "pre-commit.legacy").exists()
    rc, out = _commit(repo, "framework only")
    _assert_both_ran(repo, rc, out, checkpoints=0)


def test_a_legacy_hook_that_calls_the_hook_again_does_not_recurse(repo: Repo) -> None:
    """Some wrappers re-run `.git/hooks/<hook>`; the chain variable stops the second round."""
    hooks = _hooks(repo)
    (hooks / "pre-commit").write_text('#!/bin/sh\necho wrapper-ran\nexec "$(dirname "$0")/pre-commit" "$@"\n')
    (hooks / "pre-commit").chmod(0o755)
    githooks.install(repo.path)
    rc, out = _commit(repo, "wrapped")
    assert rc == 0, out
    assert "wrapper-ran" in out
    assert len(store.list_packages(repo.path)) == 1


def test_our_hook_kept_as_legacy_by_another_manager_runs_once(repo: Repo) -> None:
    """Any manager using pre-commit's convention (move to .legacy, run it first) works too."""
    githooks.install(repo.path)
    hooks = _hooks(repo)
    os.rename(hooks / "pre-commit", hooks / "pre-commit.legacy")
    (hooks / "pre-commit").write_text('#!/bin/sh\necho manager-ran\n'
                                      'exec "$(dirname "$0")/pre-commit.legacy" "$@"\n')  # fmt: skip
    (hooks / "pre-commit").chmod(0o755)
    rc, out = _commit(repo, "managed")
    assert rc == 0, out
    assert "manager-ran" in out and len(store.list_packages(repo.path)) == 1
    res = cli("hooks", "install", "--git", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    gone = cli("hooks", "uninstall", "--git", cwd=repo.path)
    assert gone.returncode == 0, gone.stderr
    assert not (hooks / "pre-commit.legacy").exists()
    assert b"manager-ran" in (hooks / "pre-commit").read_bytes()
