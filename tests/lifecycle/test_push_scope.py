"""`push` sends the package and nothing the user did not choose: no unpushed local commit unless
--with-head, and every file it sends is scanned (the failed-commands seed included)."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.lifecycle.sharing import HEAD_PREFIX, REF_PREFIX
from tests.helpers import cli, git
from tests.lifecycle.conftest import Shared, meta_of, reseal
from tests.package.conftest import tree_sha_of
from tests.package.test_export_secrets import PAT

DB_PW = "Zq8vN2xL5rT9wK3m"
BEARER = "eW91IHNoYWxsIG5vdCBwYXNzIHRoaXMgdG9rZW4"


def _failing_transcript(path: Path, cwd: Path, command: str) -> Path:
    base = {"sessionId": "s-1", "cwd": str(cwd), "isSidechain": False, "type": "user"}
    lines = [
        {**base, "uuid": "u1", "parentUuid": None, "timestamp": "2026-11-30T10:00:00Z",
         "message": {"role": "user", "content": "Publish the release"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-30T10:00:05Z",
         "requestId": "r1", "message": {"id": "m1", "role": "assistant", "model": "claude", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}],
             "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 0}}},
        {**base, "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-11-30T10:00:09Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                  "content": "Exit code 1\nerror: 401"}]}},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_a_failed_command_with_secrets_is_scrubbed_in_every_package_file(
    shared: Shared, tmp_path: Path
) -> None:
    cmd = (f"GITHUB_TOKEN={PAT} gh release create v1 && curl -H 'Authorization: Bearer {BEARER}' "
           f"https://x.test && psql postgres://admin:{DB_PW}@db.internal/app")  # fmt: skip
    t = _failing_transcript(tmp_path / "t.jsonl", shared.a.path, cmd)
    res = cli("export", "--transcript", str(t), "--json", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    meta = meta_of(pkg)
    assert meta["telemetry"]["failed_commands"]
    assert "[REDACTED:github-pat]" in json.dumps(meta["telemetry"]["failed_commands"])
    for f in pkg.rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert PAT not in text and BEARER not in text and DB_PW not in text, f.name
    assert "gh release create" in (pkg / "session_metadata.json").read_text()
    assert cli("validate", str(pkg), cwd=shared.a.path).returncode == 0
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr


def test_push_refuses_a_secret_planted_in_any_package_file(shared: Shared) -> None:
    pkg = Path(cli("export", "--json", cwd=shared.a.path).json()["data"]["path"])
    meta = meta_of(pkg)
    meta["telemetry"] = {"failed_commands": [{"command": f"gh auth login --with-token {PAT}"}]}
    (pkg / "session_metadata.json").write_text(json.dumps(meta))
    reseal(pkg)
    v = cli("validate", str(pkg), "--json", cwd=shared.a.path).json()
    assert any(p["code"] == "package_secret" for p in v["problems"])
    assert any(p["code"] == "provenance_mismatch" for p in v["problems"])
    assert cli("push", "origin", cwd=shared.a.path).returncode == 4  # changed since export
    cli("resume", str(pkg), "--trust", cwd=shared.a.path)  # accepted by hand: scanned anyway
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 1
    assert "package file session_metadata.json" in res.stderr and "github-pat" in res.stderr
    assert git(shared.remote, "for-each-ref", "refs/contextfork/") == ""


def _unpushed_work(shared: Shared) -> str:
    a = shared.a
    a.write("src/app.py", "x = 2  # local commit, never pushed\n")
    local = a.commit_all("local only: not for publishing")
    a.write("src/app.py", "x = 3\n")
    return local


def test_push_does_not_send_unpushed_commits_and_says_so(shared: Shared) -> None:
    local = _unpushed_work(shared)
    pid = cli("export", "--json", cwd=shared.a.path).json()["data"]["package_id"]
    res = cli("push", "origin", "--json", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    env = res.json()
    assert env["data"]["heads"][pid] == {"head": local, "unpushed_commits": 1}
    assert any(p["code"] == "head_not_on_remote" for p in env["problems"])
    text = cli("push", "origin", cwd=shared.a.path)
    assert "NOT on origin" in text.stdout and "--with-head" in text.stdout
    sha = git(shared.remote, "rev-parse", f"{REF_PREFIX}{pid}")
    assert git(shared.remote, "rev-list", "--parents", "-n1", sha) == sha  # parentless
    assert git(shared.remote, "cat-file", "-e", local, check=False) == ""
    assert git(shared.remote, "for-each-ref", HEAD_PREFIX) == ""
    assert "not for publishing" not in git(shared.remote, "log", "--all", "--format=%s")


def test_with_head_sends_it_and_clone_b_resumes_exactly(shared: Shared) -> None:
    local = _unpushed_work(shared)
    pid = cli("export", "--json", cwd=shared.a.path).json()["data"]["package_id"]
    res = cli("push", "origin", "--with-head", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    assert "1 unpushed commit(s) sent" in res.stdout
    assert git(shared.remote, "rev-parse", f"{HEAD_PREFIX}{pid}") == local
    assert cli("pull", cwd=shared.b.path).returncode == 0
    shared.b.git("checkout", "-q", "--detach", local)
    res = cli("resume", pid, "--apply", "--json", cwd=shared.b.path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["applied"]["exact"] is True
    assert tree_sha_of(shared.b.path) == tree_sha_of(shared.a.path)


def test_a_head_already_on_the_remote_is_said_and_clone_b_resumes(shared: Shared) -> None:
    _unpushed_work(shared)
    shared.a.git("push", "-q", "origin", "main")
    pkg = Path(cli("export", "--json", cwd=shared.a.path).json()["data"]["path"])
    res = cli("push", "origin", cwd=shared.a.path)
    assert res.returncode == 0, res.stderr
    assert "is on origin" in res.stdout and "NOT" not in res.stdout
    shared.b.git("pull", "-q", "origin", "main")
    assert cli("pull", cwd=shared.b.path).returncode == 0
    assert shared.b.head == meta_of(pkg)["head"]
    res = cli("resume", pkg.name, "--apply", "--json", cwd=shared.b.path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["applied"]["exact"] is True
    assert (shared.b.path / "src/app.py").read_text() == "x = 3\n"


def test_a_package_commit_with_a_parent_from_an_older_push_is_replaced(shared: Shared) -> None:
    a = shared.a
    pid = cli("export", "--json", cwd=a.path).json()["data"]["package_id"]
    assert cli("push", "origin", cwd=a.path).returncode == 0
    tree = a.git("rev-parse", f"{REF_PREFIX}{pid}^{{tree}}")
    old = a.git("commit-tree", tree, "-p", "HEAD", "-m", "old-style package commit")
    a.git("update-ref", f"{REF_PREFIX}{pid}", old)
    a.git("push", "-q", "-f", "origin", f"{REF_PREFIX}{pid}")
    res = cli("push", "origin", pid, cwd=a.path)
    assert res.returncode == 0, res.stderr
    sha = git(shared.remote, "rev-parse", f"{REF_PREFIX}{pid}")
    assert sha != old and git(shared.remote, "rev-list", "--parents", "-n1", sha) == sha
