"""`contextfork push` refuses a package whose untracked snapshots hold a secret, unless told."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.lifecycle.sharing import REF_PREFIX
from tests.helpers import cli, git
from tests.lifecycle.conftest import Shared, reseal
from tests.package.test_export_secrets import PAT


def _remote_refs(shared: Shared) -> str:
    return git(shared.remote, "for-each-ref", "refs/contextfork/")


def test_push_refuses_a_secret_then_allow_secrets_pushes_and_b_resumes_it(
    shared: Shared,
) -> None:
    shared.a.write("notes/todo.md", f"token {PAT}\n")
    pid = cli("export", "--json", cwd=shared.a.path).json()["data"]["package_id"]
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 1
    assert "notes/todo.md" in res.stderr and "github-pat" in res.stderr
    assert "--allow-secrets" in res.stderr and "Traceback" not in res.stderr
    assert _remote_refs(shared) == ""
    assert shared.a.git("for-each-ref", "refs/contextfork/") == ""  # nothing stored locally
    res = cli("push", "origin", pid, "--allow-secrets", "--json", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    env = res.json()
    assert env["data"]["secrets"] == {pid: {"notes/todo.md": ["github-pat"]}}
    assert [p["code"] for p in env["problems"]] == ["untracked_secret"]
    assert git(shared.remote, "rev-parse", f"{REF_PREFIX}{pid}")
    assert cli("pull", cwd=shared.b.path).returncode == 0
    pkg_b = shared.b.path / ".contextfork" / "packages" / pid
    assert (pkg_b / "untracked" / "notes" / "todo.md").read_text() == f"token {PAT}\n"


def test_push_all_refuses_everything_when_one_package_has_a_secret(shared: Shared) -> None:
    cli("export", cwd=shared.a.path)  # clean
    shared.a.write(".env.local", "GITHUB_TOKEN=" + PAT + "\n")
    cli("export", cwd=shared.a.path)
    res = cli("push", "origin", "--json", cwd=shared.a.path)
    assert res.returncode == 1
    env = res.json()
    assert env["ok"] is False and env["exit_code"] == 1
    assert ".env.local" in env["problems"][0]["message"]
    assert _remote_refs(shared) == ""


def test_an_emptied_secrets_list_does_not_fool_push(shared: Shared) -> None:
    shared.a.write("notes/todo.md", f"token {PAT}\n")
    pkg = Path(cli("export", "--json", cwd=shared.a.path).json()["data"]["path"])
    raw = json.loads((pkg / "untracked_manifest.json").read_text())
    for f in raw["files"]:
        f["secrets"] = []
    (pkg / "untracked_manifest.json").write_text(json.dumps(raw))
    reseal(pkg)
    assert cli("resume", str(pkg), "--trust", cwd=shared.a.path).returncode == 0
    assert cli("validate", str(pkg), cwd=shared.a.path).returncode == 0
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 1 and "github-pat" in res.stderr
    assert _remote_refs(shared) == ""


def test_push_refuses_a_secret_that_the_patch_adds_to_a_tracked_file(shared: Shared) -> None:
    shared.a.write("README.md", f"# demo\nci token: {PAT}\n")
    pkg = Path(cli("export", "--json", cwd=shared.a.path).json()["data"]["path"])
    v = cli("validate", str(pkg), "--json", cwd=shared.a.path).json()
    assert any(p["code"] == "patch_secret" and p["path"] == "git_diff.patch:README.md" for p in v["problems"])
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 1
    assert "lines the patch adds to README.md" in res.stderr and "github-pat" in res.stderr
    assert _remote_refs(shared) == ""


def test_a_secret_the_patch_removes_is_not_flagged(shared: Shared) -> None:
    shared.a.write("config.txt", f"token {PAT}\n")
    shared.a.commit_all("oops, a token")
    shared.a.write("config.txt", "token from the environment\n")
    cli("export", cwd=shared.a.path)
    res = cli("push", "origin", "--json", cwd=shared.a.path)
    assert res.returncode == 0, res.stdout
