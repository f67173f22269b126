"""``hooks install --pi`` writes contextfork's extension for pi; uninstall removes exactly it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextfork.errors import UsageError
from contextfork.harness.pi import install as pi_install
from tests.helpers import Repo, cli

ARGV = [sys.executable, "-m", "contextfork"]


def test_install_pi_writes_the_extension_with_the_absolute_command(repo: Repo) -> None:
    res = pi_install.install_pi(repo.path, "project", ARGV)

    path = repo.path / ".pi" / "extensions" / "contextfork.ts"
    assert res.data["state"] == "added" and Path(res.data["path"]) == path
    text = path.read_text()
    assert text.startswith(pi_install.MARKER)
    assert f"/*CONTEXTFORK_ARGV*/ {json.dumps(ARGV)} /*END_CONTEXTFORK_ARGV*/" in text
    assert 'registerTool' in text and '"contextfork_context"' in text


def test_install_pi_twice_changes_nothing(repo: Repo) -> None:
    pi_install.install_pi(repo.path, "project", ARGV)
    again = pi_install.install_pi(repo.path, "project", ARGV)
    assert again.data["state"] == "unchanged" and not again.data["changed"]


def test_uninstall_pi_removes_exactly_the_extension_and_the_dirs_it_created(repo: Repo) -> None:
    other = repo.path / ".pi" / "settings.json"
    other.parent.mkdir(parents=True)
    other.write_text("{}\n")
    pi_install.install_pi(repo.path, "project", ARGV)

    res = pi_install.uninstall_pi(repo.path, "project")

    assert res.data["removed"]
    assert not (repo.path / ".pi" / "extensions").exists()  # created by the install
    assert other.read_text() == "{}\n"  # was there before: stays


def test_install_pi_never_overwrites_a_foreign_file_of_that_name(repo: Repo) -> None:
    path = repo.path / ".pi" / "extensions" / "contextfork.ts"
    path.parent.mkdir(parents=True)
    path.write_text("export default function () {}\n")

    with pytest.raises(UsageError):
        pi_install.install_pi(repo.path, "project", ARGV)
    assert pi_install.uninstall_pi(repo.path, "project").data["removed"] is False
    assert path.read_text() == "export default function () {}\n"


def test_user_scope_honours_pi_coding_agent_dir(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    res = pi_install.install_pi(repo.path, "user", ARGV)
    assert Path(res.data["path"]) == tmp_path / "agent" / "extensions" / "contextfork.ts"


def test_cli_hooks_install_pi_checks_the_command_and_reports_json(repo: Repo) -> None:
    res = cli("hooks", "install", "--pi", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data = res.json()["data"]
    assert data["harness"] == "pi" and data["state"] == "added"
    assert Path(data["command"][0]).is_absolute()
    out = cli("hooks", "uninstall", "--pi", "--json", cwd=repo.path)
    assert out.returncode == 0 and out.json()["data"]["removed"]
