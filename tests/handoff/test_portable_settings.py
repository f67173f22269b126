"""This machine's hook paths go to .claude/settings.local.json, never to the committed
.claude/settings.json that export + resume --apply carry to other clones; doctor finds an older
install that put them there and the install moves them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.harness.hooks import install
from tests.helpers import Repo, cli


def _commands(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    out = [h["command"] for groups in data.get("hooks", {}).values() for g in groups
           for h in g["hooks"]]  # fmt: skip
    sl = data.get("statusLine")
    return out + ([sl["command"]] if sl else [])


def _doctor(repo: Repo, name: str) -> dict[str, Any]:
    res = cli("doctor", "--json", cwd=repo.path)
    return next(c for c in res.json()["data"]["checks"] if c["name"] == name)


def test_project_install_writes_machine_paths_only_to_the_local_settings(repo: Repo) -> None:
    res = cli("hooks", "install", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    local = repo.path / ".claude" / "settings.local.json"
    assert res.json()["data"]["path"] == str(local)
    assert all(c.startswith("/") for c in _commands(local))
    assert not (repo.path / ".claude" / "settings.json").exists()
    # excluded: no export captures it (the portable /handoff command is the one new file)
    assert repo.git("status", "--porcelain") == "?? .claude/"
    out = cli("export", "--json", cwd=repo.path).json()["data"]
    um = json.loads((Path(out["path"]) / "untracked_manifest.json").read_text())
    assert [f["path"] for f in um["files"]] == [".claude/commands/handoff.md"]


def test_doctor_finds_an_old_install_in_the_shared_settings_and_install_moves_it(
    repo: Repo,
) -> None:
    from contextfork.harness.hooks.entrypoint import checked_command

    install.install_claude(repo.path, "shared", command=checked_command())  # as before
    shared = repo.path / ".claude" / "settings.json"
    assert any(c.startswith("/") for c in _commands(shared))
    check = _doctor(repo, "hooks claude shared")
    assert check["status"] == "warning" and "exits 127" in check["detail"]
    assert "contextfork hooks install --claude moves them" in check["fix"]
    res = cli("hooks", "install", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["moved_from_shared"]["path"] == str(shared)
    assert not shared.exists() or not _commands(shared)
    assert _doctor(repo, "hooks claude shared")["status"] == "ok"
    assert _doctor(repo, "hooks claude project")["status"] == "ok"


def test_shared_install_writes_only_the_portable_command(repo: Repo) -> None:
    res = cli("hooks", "install", "--claude", "--shared", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    cmds = _commands(repo.path / ".claude" / "settings.json")
    assert cmds and all(c.split()[0] == "contextfork" for c in cmds)


def test_project_uninstall_also_removes_an_old_install_from_the_shared_settings(
    repo: Repo,
) -> None:
    from contextfork.harness.hooks.entrypoint import checked_command

    install.install_claude(repo.path, "shared", command=checked_command())  # as before
    res = cli("hooks", "uninstall", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["removed_from_shared"] == dict.fromkeys(install.CLAUDE_HOOKS, 1)
    shared = repo.path / ".claude" / "settings.json"
    assert not shared.exists() or not _commands(shared)


def test_doctor_warns_when_the_plugin_and_installed_hooks_would_both_run(
    repo: Repo, tmp_path: Path
) -> None:
    import os

    assert _doctor(repo, "hooks claude plugin")["status"] == "ok"
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"enabledPlugins": {"contextfork@contextfork": True}}))
    check = _doctor(repo, "hooks claude plugin")
    assert check["status"] == "ok" and "enabled" in check["detail"]
    assert cli("hooks", "install", "--claude", "--project", cwd=repo.path).returncode == 0
    check = _doctor(repo, "hooks claude plugin")
    assert check["status"] == "warning" and "fires twice" in check["detail"]
    assert "contextfork hooks uninstall --claude" in check["fix"]
