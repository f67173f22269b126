from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from contextfork.errors import GitError, IntegrityError
from contextfork.lifecycle.sharing import REF_PREFIX, pull, push
from contextfork.package import store
from contextfork.package.export import ExportOptions, export
from tests.helpers import cli, git
from tests.lifecycle.conftest import Shared, meta_of
from tests.package.conftest import tree_sha_of


def _work_in_a(shared: Shared) -> None:
    a = shared.a
    a.write("src/app.py", "x = 2  # unpushed commit\n")
    a.commit_all("local only, never pushed as a branch")
    a.write("src/app.py", b"x = 3\r\n")
    a.write("bin.dat", bytes(range(256)))
    a.git("add", "bin.dat")
    a.git("mv", "README.md", "READ ME.md")
    a.write("notes/todo.txt", "untracked todo\n")


def test_push_pull_then_resume_apply_in_clone_b_reproduces_a_exactly(shared: Shared) -> None:
    _work_in_a(shared)
    out = cli("export", "--goal", "share", "--json", cwd=shared.a.path).json()
    pid = out["data"]["package_id"]
    res = cli("push", "origin", "--with-head", "--json", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    assert git(shared.remote, "rev-parse", f"{REF_PREFIX}{pid}")
    res = cli("pull", "--json", cwd=shared.b.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["pulled"] == [pid]
    pkg_b = shared.b.path / ".contextfork" / "packages" / pid
    meta = meta_of(pkg_b)
    # --with-head carried A's unpushed HEAD along (refs/contextfork/heads/<id>)
    shared.b.git("checkout", "-q", "--detach", meta["head"])
    assert cli("validate", pid, cwd=shared.b.path).returncode == 0
    res = cli("resume", pid, "--apply", "--json", cwd=shared.b.path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["applied"]["exact"] is True
    assert tree_sha_of(shared.b.path) == meta["worktree_tree_sha"] == tree_sha_of(shared.a.path)
    assert (shared.b.path / "src/app.py").read_bytes() == b"x = 3\r\n"
    again = pull(shared.b.path, "origin")
    assert again.data["pulled"] == [] and again.data["already_present"] == [pid]


def test_push_is_idempotent_and_refuses_a_tampered_package(shared: Shared) -> None:
    out = export(shared.a.path, ExportOptions())
    first = push(shared.a.path, "origin", out.package_id).data["packages"]
    assert push(shared.a.path, "origin", None).data["packages"] == first
    other = export(shared.a.path, ExportOptions())
    (other.path / "handoff.json").write_text("{}")
    try:
        push(shared.a.path, "origin", other.package_id)
    except IntegrityError as exc:
        assert "integrity" in exc.message
    else:
        raise AssertionError("a tampered package was pushed")


def _plant(shared: Shared, pid: str, mutate: str) -> None:
    """Forge a package commit on the remote whose tree holds something hostile."""
    a = shared.a
    out = export(a.path, ExportOptions())
    push(a.path, "origin", out.package_id)
    tree = a.git("rev-parse", f"{REF_PREFIX}{out.package_id}^{{tree}}")
    listing = a.git("ls-tree", tree)
    if mutate == "symlink":
        blob = a.git("hash-object", "-w", "--stdin", input=b"/etc/passwd")
        listing += f"\n120000 blob {blob}\tevil"
    else:
        sub = a.git("mktree", input=f"100644 blob {a.git('hash-object', '-w', '--stdin', input=b'x')}\tconfig\n".encode())
        listing += f"\n040000 tree {sub}\t.git"
    bad_tree = a.git("mktree", input=(listing + "\n").encode())
    commit = a.git("commit-tree", bad_tree, "-m", "forged")
    a.git("push", "-q", "origin", f"{commit}:{REF_PREFIX}{pid}")


def test_pull_refuses_a_symlink_or_a_dot_git_path_in_a_package_tree(shared: Shared) -> None:
    _plant(shared, "20990101T000000000Z-aaaaaa", "symlink")
    _plant(shared, "20990101T000000000Z-bbbbbb", "dotgit")
    res = pull(shared.b.path, "origin")
    assert res.exit_code == 3
    refused = {p.path: p.message for p in res.problems}
    assert "symlink" in refused["20990101T000000000Z-aaaaaa"]
    assert ".git" in refused["20990101T000000000Z-bbbbbb"]
    ids = {r.package_id for r in store.list_packages(shared.b.path)}
    assert not ids & set(refused) and len(ids) == 2
    assert not any(p.name.startswith(".staging") for p in (shared.b.path / ".contextfork/packages").iterdir())
    assert not os.path.lexists(Path(shared.b.path / ".contextfork/packages/20990101T000000000Z-aaaaaa"))


def test_push_waits_for_a_ref_lock_that_clears_and_names_one_that_does_not(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git leaves ``<ref>.lock`` on the remote when a push there is killed with -9."""
    from contextfork.gitstate import refs

    monkeypatch.setattr(refs, "LOCK_WAIT", 0.6)
    pid = export(shared.a.path, ExportOptions()).package_id
    lock = shared.remote / f"{REF_PREFIX}{pid}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    with pytest.raises(GitError) as failed:
        push(shared.a.path, "origin", pid)
    assert f"the remote holds the lock {lock}" in failed.value.message.replace("/./", "/")
    assert not git(shared.remote, "for-each-ref", REF_PREFIX)
    wait = time.sleep

    def other_push_finishes(seconds: float) -> None:  # while push waits to try again
        lock.unlink(missing_ok=True)
        wait(seconds)

    monkeypatch.setattr(refs.time, "sleep", other_push_finishes)
    assert push(shared.a.path, "origin", pid).data["packages"]
    assert git(shared.remote, "rev-parse", f"{REF_PREFIX}{pid}")
