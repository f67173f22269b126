from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from contextfork import gitstate
from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env, cli, git, make_repo
from tests.package.conftest import tree_sha_of


def _restore_into(pkg: Path, target: Path) -> None:
    """Apply the package to a clean checkout the way a user on another machine would."""
    patch = (pkg / "git_diff.patch").read_bytes()
    if patch.strip():
        subprocess.run(
            ["git", "apply", "--index", "--binary", "-"],
            cwd=target,
            input=patch,
            env=clean_env(),
            check=True,
        )
    um = json.loads((pkg / "untracked_manifest.json").read_text())
    for f in um["files"]:
        if f["captured"]:
            dest = target / f["path"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((pkg / "untracked" / f["path"]).read_bytes())
            if f["mode"] == "100755":
                dest.chmod(0o755)


def test_export_round_trip_reproduces_the_exported_tree_sha(
    exact_repo: Repo, tmp_path: Path
) -> None:
    out = export(exact_repo.path, ExportOptions())
    meta = json.loads((out.path / "session_metadata.json").read_text())
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(exact_repo.path), str(clone))
    git(clone, "checkout", "-q", "--detach", meta["head"])
    _restore_into(out.path, clone)
    assert tree_sha_of(clone) == meta["worktree_tree_sha"]
    # and the bytes really are the same, CRLF and Latin-1 included
    assert (clone / "crlf.txt").read_bytes() == b"one\r\ntwo changed\r\nthree\r\n"
    assert (clone / "latin1.txt").read_bytes() == "caf\xe9 cr\xe8me\n".encode("latin-1")
    assert (clone / "b c.py").exists() and not (clone / "a.py").exists()
    assert os.access(clone / "script.sh", os.X_OK)


def test_export_records_every_change_kind_in_git_status(exact_repo: Repo) -> None:
    out = export(exact_repo.path, ExportOptions())
    gs = json.loads((out.path / "git_status.json").read_text())
    assert gs["branch"] == "main" and not gs["detached"] and not gs["unborn"]
    assert gs["head"] == exact_repo.head
    assert {"old": "a.py", "new": "b c.py"}.items() <= gs["renamed"][0].items() or any(
        r["old"] == "a.py" and r["new"] == "b c.py" for r in gs["renamed"]
    )
    assert any(r["new"] == "docs/ünïcödé name.md" for r in gs["renamed"])
    assert "gone.txt" in gs["deleted"]
    assert "both.py" in gs["staged"] and "both.py" in gs["modified"]
    assert {"path": "script.sh", "old_mode": "100644", "new_mode": "100755"} in gs["mode_changes"]
    assert gs["untracked"] == ["new/data.bin", "new/untracked.txt"]


def test_export_never_captures_ignored_files_even_inside_untracked_dirs(exact_repo: Repo) -> None:
    out = export(exact_repo.path, ExportOptions())
    um = json.loads((out.path / "untracked_manifest.json").read_text())
    paths = [f["path"] for f in um["files"]]
    assert "new/.env" not in paths and ".env" not in paths and "build/out.o" not in paths
    assert not (out.path / "untracked" / "new" / ".env").exists()
    assert b"API_KEY" not in (out.path / "git_diff.patch").read_bytes()


def test_export_diffs_against_the_empty_tree_on_an_unborn_head(
    empty_repo: Repo, tmp_path: Path
) -> None:
    empty_repo.write("staged.txt", "staged\n")
    empty_repo.git("add", "staged.txt")
    empty_repo.write("staged.txt", "staged and edited\n")
    empty_repo.write("loose.txt", "untracked\n")
    out = export(empty_repo.path, ExportOptions())
    gs = json.loads((out.path / "git_status.json").read_text())
    assert gs["unborn"] and gs["head"] is None and gs["branch"] == "main"
    meta = json.loads((out.path / "session_metadata.json").read_text())
    fresh = make_repo(tmp_path / "fresh", commit=False)
    _restore_into(out.path, fresh.path)
    assert (fresh.path / "staged.txt").read_text() == "staged and edited\n"
    assert tree_sha_of(fresh.path) == meta["worktree_tree_sha"]


def test_export_records_a_detached_head_as_detached_not_as_a_branch_named_head(repo: Repo) -> None:
    repo.git("checkout", "-q", "--detach")
    out = export(repo.path, ExportOptions())
    gs = json.loads((out.path / "git_status.json").read_text())
    assert gs["detached"] is True and gs["branch"] is None and gs["head"] == repo.head


def test_export_records_symlinks_as_links_and_never_follows_them(
    repo: Repo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("do not capture\n")
    os.symlink(outside, repo.path / "link-out")
    out = export(repo.path, ExportOptions())
    um = json.loads((out.path / "untracked_manifest.json").read_text())
    link = next(f for f in um["files"] if f["path"] == "link-out")
    assert link["captured"] is False and link["reason"] == "symlink"
    assert link["link_target"] == str(outside) and link["mode"] == "120000"
    assert not (out.path / "untracked" / "link-out").exists()


def test_export_lists_files_over_the_size_cap_with_the_reason(repo: Repo) -> None:
    repo.write("big.log", b"x" * 5000)
    repo.write("small.log", b"y" * 10)
    out = export(repo.path, ExportOptions(file_cap=1000))
    um = {
        f["path"]: f
        for f in json.loads((out.path / "untracked_manifest.json").read_text())["files"]
    }
    assert um["big.log"]["captured"] is False and um["big.log"]["reason"] == "too_large"
    assert um["big.log"]["size"] == 5000
    assert um["small.log"]["captured"] is True


def test_export_records_submodules_without_descending(repo: Repo, tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "sub", files={"lib.py": "x = 1\n"})
    repo.git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "vendor/sub"
    )
    repo.commit_all("add submodule")
    (repo.path / "vendor" / "sub" / "lib.py").write_text("x = 2\n")
    out = export(repo.path, ExportOptions())
    gs = json.loads((out.path / "git_status.json").read_text())
    assert [s["path"] for s in gs["submodules"]] == ["vendor/sub"]
    um = json.loads((out.path / "untracked_manifest.json").read_text())
    assert not any(f["path"].startswith("vendor/sub/") for f in um["files"])
    assert b"vendor/sub" not in (out.path / "git_diff.patch").read_bytes()


def test_export_never_wipes_an_earlier_package_and_excludes_its_own_dir(repo: Repo) -> None:
    first = export(repo.path, ExportOptions())
    second = export(repo.path, ExportOptions())
    assert first.package_id != second.package_id
    assert first.path.is_dir() and second.path.is_dir()
    exclude = (repo.path / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.contextfork/") == 1
    assert ".contextfork" not in json.dumps(
        json.loads((second.path / "git_status.json").read_text())
    )


def test_export_survives_a_non_utf8_file_name(repo: Repo) -> None:
    name = os.fsencode(str(repo.path)) + b"/bad-\xff-name.txt"
    with open(name, "wb") as fh:
        fh.write(b"content\n")
    out = export(repo.path, ExportOptions())
    um = json.loads((out.path / "untracked_manifest.json").read_text())
    bad = [f for f in um["files"] if f["reason"] == "non_utf8_name"]
    assert len(bad) == 1 and "\\xff" in bad[0]["path"]


def test_export_cli_prints_a_json_envelope_and_handoff_goal(repo: Repo) -> None:
    repo.write("src/app.py", "def main():\n    return 2\n")
    res = cli("export", "--goal", "Ship the fix", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    env = res.json()
    assert env["envelope_version"] == "1" and env["ok"] and env["command"] == "export"
    pkg = Path(env["data"]["path"])
    handoff = json.loads((pkg / "handoff.json").read_text())
    assert handoff["active_goal"]["goal"] == "Ship the fix"
    assert "Ship the fix" in (pkg / "handoff_summary.md").read_text()
    assert handoff["working_tree_state"]["modified"] == 1


def test_export_outside_a_repository_is_one_clear_error(tmp_path: Path) -> None:
    res = cli("export", cwd=tmp_path)
    assert res.returncode == 4
    assert "not a git repository" in res.stderr and "Traceback" not in res.stderr


def test_export_is_atomic_no_staging_dir_left_behind(repo: Repo) -> None:
    export(repo.path, ExportOptions())
    leftovers = [
        p.name
        for p in (repo.path / ".contextfork" / "packages").iterdir()
        if p.name.startswith(".")
    ]
    assert leftovers == []


def test_gitstate_handles_hook_environment_variables(repo: Repo) -> None:
    # A hook inherits GIT_INDEX_FILE/GIT_DIR; our calls must still see the right repo.
    os.environ["GIT_INDEX_FILE"] = "/nonexistent/index"
    try:
        assert gitstate.repo_root(repo.path) == repo.path.resolve()
    finally:
        del os.environ["GIT_INDEX_FILE"]


def _claude_line(**kw: object) -> str:
    return json.dumps(kw)


def test_export_seeds_failed_commands_and_goals_from_a_transcript(
    repo: Repo, tmp_path: Path
) -> None:
    t = tmp_path / "session.jsonl"
    base = {"sessionId": "s-1", "cwd": str(repo.path), "isSidechain": False, "type": "user"}
    lines = [
        {**base, "uuid": "u1", "parentUuid": None, "timestamp": "2026-11-30T10:00:00Z",
         "message": {"role": "user", "content": "Make the billing tests pass"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-30T10:00:05Z",
         "requestId": "r1", "message": {"id": "m1", "role": "assistant", "model": "claude", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest tests/test_billing.py"}}],
             "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}},
        {**base, "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-11-30T10:00:09Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                  "content": "Exit code 1\nE   ImportError: cannot import name 'charge'"}]}},
    ]  # fmt: skip
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = cli("export", "--transcript", str(t), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    h = json.loads((pkg / "handoff.json").read_text())
    assert h["active_goal"]["candidates"] == ["Make the billing tests pass"]
    fa = h["failed_approaches"]
    assert fa and fa[0]["machine_seeded"] and "pytest tests/test_billing.py" in fa[0]["approach"]
    assert "ImportError" in (fa[0]["error_excerpt"] or "")
    meta = json.loads((pkg / "session_metadata.json").read_text())
    assert meta["parent_session_id"] == "s-1" and meta["transcript"]["sha256"]
    v = cli("validate", "--json", cwd=repo.path)
    assert v.returncode == 0, v.stdout


def test_export_records_a_merge_in_progress_with_its_conflicts(repo: Repo) -> None:
    repo.conflicting_merge("README.md")
    out = export(repo.path, ExportOptions())
    gs = json.loads((out.path / "git_status.json").read_text())
    assert gs["operation"] == "merge" and gs["conflicts"] == ["README.md"]
    assert any(p.code == "operation_in_progress" for p in out.problems)
