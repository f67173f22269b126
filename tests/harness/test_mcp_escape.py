"""MCP tools resolve everything from the allowed root: a bare package id never names a
directory of the server's working directory, and a workspace whose `.git` file points at a git
dir outside the allowed roots is refused before git reads or writes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver.exceptions import ToolError

from contextfork.harness.mcp import server as mcp_server
from tests.helpers import Repo, make_repo, run_cli


def _forged_package(where: Path, name: str) -> Path:
    pkg = where / name
    pkg.mkdir(parents=True)
    (pkg / "manifest.json").write_text(json.dumps({"package_id": name, "files": []}))
    (pkg / "handoff_summary.md").write_text("SECRET OUTSIDE THE ROOT\n")
    (pkg / "session_metadata.json").write_text("{}")
    (pkg / "handoff.json").write_text("{}")
    return pkg


def test_a_bare_package_id_is_never_resolved_against_the_server_cwd(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere"
    _forged_package(outside, "20990101T000000000Z-evil00")
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(outside)
    for call in (mcp_server.read_handoff_summary, mcp_server.get_package_details,
                 mcp_server.validate_session_context):  # fmt: skip
        with pytest.raises(ToolError) as err:
            call(str(repo.path), "20990101T000000000Z-evil00")
        assert "SECRET" not in str(err.value) and "NotFoundError" in str(err.value)


def test_a_bare_package_id_still_names_a_package_of_the_workspace(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = run_cli("export", "--json", cwd=repo.path).json()["data"]["package_id"]
    outside = tmp_path / "elsewhere"
    _forged_package(outside, pid)  # same name in the cwd: the workspace's package wins
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(outside)
    out = mcp_server.read_handoff_summary(str(repo.path), pid)
    assert "SECRET" not in out["data"]["markdown"]
    assert out["data"]["package_id"] == pid
    assert mcp_server.read_handoff_summary(str(repo.path), pid[:12])["data"]["package_id"] == pid


def test_a_workspace_whose_git_file_points_outside_the_roots_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_repo(tmp_path / "other")
    allowed = tmp_path / "allowed"
    ws = allowed / "ws"
    ws.mkdir(parents=True)
    shutil.copy(other.path / "README.md", ws / "README.md")
    (ws / ".git").write_text(f"gitdir: {other.path / '.git'}\n")
    exclude = other.path / ".git" / "info" / "exclude"
    before = exclude.read_bytes() if exclude.exists() else None
    refs_before = other.git("for-each-ref")
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(allowed))
    monkeypatch.chdir(allowed)
    for call in (mcp_server.export_session_context, mcp_server.get_context_status,
                 mcp_server.validate_session_context, mcp_server.resume_session_context):  # fmt: skip
        with pytest.raises(ToolError, match="git dir"):
            call(str(ws))
    assert (exclude.read_bytes() if exclude.exists() else None) == before
    assert other.git("for-each-ref") == refs_before
    assert not (ws / ".contextfork").exists()


def test_a_linked_worktree_whose_main_repo_is_allowed_still_works(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = repo.path / "wt"
    repo.git("worktree", "add", "-q", str(wt), "-b", "side")
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(repo.path)
    out = mcp_server.export_session_context(str(wt))
    assert out["ok"] is True
