from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from contextfork.errors import UsageError
from contextfork.lifecycle import githooks
from contextfork.package import store
from tests.helpers import Repo, clean_env, cli

FOREIGN = b"#!/bin/sh\necho foreign-hook-ran\nexit 0\n"


def _commit(repo: Repo, msg: str, rel: str = "f.txt") -> subprocess.CompletedProcess[str]:
    repo.write(rel, f"{msg}\n")
    repo.git("add", rel)
    return subprocess.run(["git", "commit", "-qm", msg], cwd=repo.path, env=clean_env(),
                          capture_output=True, text=True, check=False)


def _hooks(repo: Repo) -> Path:
    return repo.path / ".git" / "hooks"


def test_hooks_work_on_an_unborn_head_and_note_the_first_commit(empty_repo: Repo) -> None:
    githooks.install(empty_repo.path)
    proc = _commit(empty_repo, "first")
    assert proc.returncode == 0, proc.stderr
    refs = store.list_packages(empty_repo.path)
    assert len(refs) == 1
    meta = json.loads((refs[0].path / "session_metadata.json").read_text())
    assert meta["trigger"] == "pre-commit" and meta["unborn"] is True
    note = empty_repo.git("notes", "--ref=contextfork", "show", "HEAD")
    assert f"contextfork-checkpoint: {refs[0].package_id}" in note
    log = cli("log", "--json", cwd=empty_repo.path).json()["data"]["commits"]
    assert log[0]["checkpoint"] == refs[0].package_id and log[0]["status"] == "present"


def test_installing_hooks_twice_is_idempotent_and_keeps_one_legacy(repo: Repo) -> None:
    (_hooks(repo) / "pre-commit").write_bytes(FOREIGN)
    (_hooks(repo) / "pre-commit").chmod(0o755)
    githooks.install(repo.path)
    first = {p.name: p.read_bytes() for p in _hooks(repo).iterdir() if not p.name.endswith(".sample")}
    res = cli("hooks", "install", "--git", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    second = {p.name: p.read_bytes() for p in _hooks(repo).iterdir() if not p.name.endswith(".sample")}
    assert first == second
    assert sorted(second) == ["post-commit", "pre-commit", "pre-commit.legacy"]
    assert second["pre-commit.legacy"] == FOREIGN


def test_a_failing_foreign_hook_still_blocks_the_commit(repo: Repo) -> None:
    hook = _hooks(repo) / "pre-commit"
    hook.write_bytes(b"#!/bin/sh\necho 'lint failed' >&2\nexit 3\n")
    hook.chmod(0o755)
    githooks.install(repo.path)
    before = repo.head
    proc = _commit(repo, "blocked")
    assert proc.returncode != 0 and "lint failed" in proc.stderr
    assert repo.head == before and store.list_packages(repo.path) == []
    ok_hook = _hooks(repo) / "pre-commit.legacy"
    ok_hook.write_bytes(FOREIGN)
    proc = _commit(repo, "allowed")
    assert proc.returncode == 0 and "foreign-hook-ran" in proc.stdout + proc.stderr
    assert len(store.list_packages(repo.path)) == 1


def test_uninstall_restores_exactly_what_was_there(repo: Repo) -> None:
    hook = _hooks(repo) / "pre-commit"
    hook.write_bytes(FOREIGN)
    hook.chmod(0o750)
    githooks.install(repo.path)
    res = cli("hooks", "uninstall", "--git", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert hook.read_bytes() == FOREIGN and (hook.stat().st_mode & 0o777) == 0o750
    assert not (_hooks(repo) / "post-commit").exists()
    assert not (_hooks(repo) / "pre-commit.legacy").exists()
    assert not (repo.path / ".contextfork" / "git-hooks.json").exists()


def test_pre_commit_is_fail_open_on_an_internal_error_and_strict_blocks(repo: Repo) -> None:
    githooks.install(repo.path)
    packages = repo.path / ".contextfork" / "packages"
    packages.parent.mkdir(exist_ok=True)
    packages.write_text("not a directory: export cannot write here\n")
    proc = _commit(repo, "goes through")
    assert proc.returncode == 0
    errs = [ln for ln in proc.stderr.splitlines() if "contextfork" in ln]
    assert len(errs) == 1 and "Traceback" not in proc.stderr
    githooks.install(repo.path, strict=True)
    before = repo.head
    proc = _commit(repo, "blocked by strict")
    assert proc.returncode != 0 and repo.head == before


def test_hooks_respect_core_hooks_path_outside_the_work_tree(repo: Repo, tmp_path: Path) -> None:
    shared_hooks = tmp_path / "shared-hooks"
    repo.git("config", "core.hooksPath", str(shared_hooks))
    res = cli("hooks", "install", "--git", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["hooks_dir"] == str(shared_hooks)
    assert githooks.is_ours(shared_hooks / "pre-commit")
    assert not (_hooks(repo) / "pre-commit").exists()
    assert _commit(repo, "via hooksPath").returncode == 0
    assert len(store.list_packages(repo.path)) == 1


def test_hooks_refuse_a_core_hooks_path_inside_the_work_tree(repo: Repo) -> None:
    repo.git("config", "core.hooksPath", ".husky")
    res = cli("hooks", "install", "--git", cwd=repo.path)
    assert res.returncode == 2 and "core.hooksPath" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (repo.path / ".husky").exists()


def test_hook_git_calls_ignore_a_foreign_git_index_file(repo: Repo, tmp_path: Path) -> None:
    githooks.install(repo.path)
    bogus = tmp_path / "elsewhere-index"
    env = clean_env({"GIT_INDEX_FILE": str(bogus)})
    proc = subprocess.run([str(_hooks(repo) / "pre-commit")], cwd=repo.path, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "checkpoint" in proc.stderr
    assert len(store.list_packages(repo.path)) == 1 and not bogus.exists()


def test_checkpoints_beyond_the_configured_number_are_pruned(repo: Repo) -> None:
    githooks.install(repo.path, keep=2)
    for i in range(4):
        assert _commit(repo, f"c{i}").returncode == 0
    refs = store.list_packages(repo.path)
    assert len(refs) == 2
    log = cli("log", "-n", "4", "--json", cwd=repo.path).json()["data"]["commits"]
    assert [c["status"] for c in log] == ["present", "present", "missing (pruned, or not pulled here)",
                                          "missing (pruned, or not pulled here)"]
    assert [c["checkpoint"] for c in log[:2]] == [r.package_id for r in reversed(refs)]


def test_hooks_install_refuses_when_a_foreign_legacy_would_be_lost(repo: Repo) -> None:
    for name in ("pre-commit", "pre-commit.legacy"):
        (_hooks(repo) / name).write_bytes(FOREIGN)
    with pytest.raises(UsageError, match="refusing"):
        githooks.install(repo.path)
    assert (_hooks(repo) / "pre-commit").read_bytes() == FOREIGN


def test_hooks_install_needs_a_target_and_dispatches_claude_to_the_harness(
    repo: Repo, tmp_path: Path
) -> None:
    res = cli("hooks", "install", cwd=repo.path)
    assert res.returncode == 2 and "--git" in res.stderr
    env = {"HOME": str(tmp_path / "home"), "CONTEXTFORK_TEST_HOME": str(tmp_path / "home")}
    settings = repo.path / ".claude" / "settings.local.json"
    assert cli("hooks", "install", "--claude", "--project", cwd=repo.path, env=env).returncode == 0
    assert "UserPromptSubmit" in settings.read_text()
    assert cli("hooks", "uninstall", "--claude", "--project", cwd=repo.path, env=env).returncode == 0
    assert not settings.exists()  # the install created it: uninstall puts back "no file"


def test_hook_scripts_call_the_installing_interpreter_by_absolute_path(repo: Repo) -> None:
    import sys

    githooks.install(repo.path)
    text = (_hooks(repo) / "pre-commit").read_text()
    assert f"{sys.executable} -m contextfork.lifecycle.gitrun pre-commit" in text
    assert os.path.isabs(sys.executable) and githooks.MARKER in text


def test_a_strict_hook_installed_under_the_old_module_name_still_checkpoints(repo: Repo) -> None:
    # Hooks installed before contextfork.lifecycle existed run `-m contextfork.githooks`; a
    # strict one would block every commit if that name stopped running the hook.
    githooks.install(repo.path, strict=True)
    hook = _hooks(repo) / "pre-commit"
    hook.write_text(hook.read_text().replace("contextfork.lifecycle.gitrun", "contextfork.githooks"))
    assert "-m contextfork.githooks pre-commit --strict" in hook.read_text()
    proc = _commit(repo, "old hook")
    assert proc.returncode == 0, proc.stderr
    assert "contextfork: checkpoint " in proc.stderr
    assert len(store.list_packages(repo.path)) == 1


def test_a_pruned_checkpoint_leaves_at_once_and_its_files_go_after_the_hook(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 27: a commit waited on the unlinks of the checkpoint it pruned (a hundred files).
    githooks.install(repo.path, keep=1)
    repo.write("new.txt", "x\n")
    githooks.pre_commit(repo.path)
    first = store.list_packages(repo.path)[0]
    deleted_here: list[str] = []
    real = shutil.rmtree

    def recorded(path: str, *args: Any, **kwargs: Any) -> None:
        deleted_here.append(str(path))
        real(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", recorded)
    second = githooks.pre_commit(repo.path)
    assert [r.package_id for r in store.list_packages(repo.path)] == [second]
    assert not any(first.package_id in p for p in deleted_here)  # not by the hook itself
    base = first.path.parent
    for _ in range(100):  # a detached rm -rf
        if not [n for n in os.listdir(base) if first.package_id in n]:
            break
        time.sleep(0.05)
    assert not [n for n in os.listdir(base) if first.package_id in n]
