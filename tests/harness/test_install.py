"""Installing hooks merges into the user's settings, is idempotent, and uninstall restores them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.errors import UsageError
from contextfork.harness.hooks import install
from contextfork.harness.hooks.entrypoint import checked_command

EXE = checked_command()  # the absolute entry point install writes (see test_install_entrypoint)

FOREIGN = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "/usr/local/bin/remind.sh", "timeout": 5}]}
        ],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.py"}]}],
    },
    "model": "opus",
}


def _write(path: Path, obj: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(obj, indent=2) + "\n").encode()
    path.write_bytes(data)
    return data


def test_install_adds_our_hooks_beside_foreign_ones(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    _write(settings, FOREIGN)
    res = install.install_claude(tmp_path, "project")
    assert res.ok and res.data["changed"]
    data = json.loads(settings.read_text())
    assert data["permissions"] == FOREIGN["permissions"]
    assert data["env"] == FOREIGN["env"]
    assert data["model"] == "opus"
    assert list(data)[:3] == ["permissions", "env", "hooks"]  # key order kept
    ups = data["hooks"]["UserPromptSubmit"]
    assert ups[0] == FOREIGN["hooks"]["UserPromptSubmit"][0]  # theirs first, untouched
    assert ups[1]["hooks"][0] == {
        "type": "command",
        "command": f"{EXE} hooks run user-prompt-submit",
        "timeout": 10,
    }
    assert data["hooks"]["PreToolUse"] == FOREIGN["hooks"]["PreToolUse"]
    assert data["hooks"]["PreCompact"][0]["hooks"][0]["command"] == f"{EXE} hooks run pre-compact"
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == f"{EXE} hooks run session-start"
    assert data["statusLine"] == {
        "type": "command",
        "command": f"{EXE} statusline",
        "padding": 0,
    }


def test_install_twice_changes_nothing(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    _write(settings, FOREIGN)
    install.install_claude(tmp_path, "project")
    first = settings.read_bytes()
    res = install.install_claude(tmp_path, "project")
    assert not res.data["changed"]
    assert set(res.data["events"].values()) == {"unchanged"}
    assert settings.read_bytes() == first


def test_uninstall_restores_the_original_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    original = _write(settings, FOREIGN)
    install.install_claude(tmp_path, "project")
    res = install.uninstall_claude(tmp_path, "project")
    assert res.data["removed"] == {"UserPromptSubmit": 1, "PreCompact": 1, "SessionStart": 1,
                                   "SubagentStart": 1, "SubagentStop": 1}
    assert res.data["statusline_removed"]
    assert settings.read_bytes() == original


def test_install_into_a_missing_file_then_uninstall_removes_it_again(tmp_path: Path) -> None:
    res = install.install_claude(tmp_path, "project")
    settings = tmp_path / ".claude" / "settings.local.json"
    assert settings.exists() and res.data["statusline"] == "set"
    gone = install.uninstall_claude(tmp_path, "project")
    assert gone.data["restored"] == "file_removed"
    assert not settings.exists() and not (tmp_path / ".claude").exists()


def test_a_foreign_statusline_is_kept_and_reported(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    mine = {"statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}}
    _write(settings, mine)
    res = install.install_claude(tmp_path, "project")
    assert res.data["statusline"] == "kept_existing"
    assert any(p.code == "statusline_exists" for p in res.problems)
    assert json.loads(settings.read_text())["statusLine"] == mine["statusLine"]
    install.uninstall_claude(tmp_path, "project")
    assert json.loads(settings.read_text()) == mine


def test_user_scope_honours_claude_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    res = install.install_claude(tmp_path / "repo", "user")
    assert res.data["path"] == str(cfg / "settings.json")
    assert "UserPromptSubmit" in json.loads((cfg / "settings.json").read_text())["hooks"]


def test_a_stale_entry_of_ours_is_replaced_not_duplicated(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    old = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/opt/venv/bin/contextfork hook user-prompt-submit",
                            "timeout": 3,
                        }
                    ]
                }
            ]
        }
    }
    _write(settings, old)
    res = install.install_claude(tmp_path, "project")
    assert res.data["events"]["UserPromptSubmit"] == "updated"
    groups = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert len(groups) == 1 and groups[0]["hooks"][0]["timeout"] == 10


def test_invalid_settings_are_left_untouched(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json")
    with pytest.raises(UsageError):
        install.install_claude(tmp_path, "project")
    assert settings.read_text() == "{ not json"


def test_symlinked_settings_are_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    _write(real, {"model": "opus"})
    link = tmp_path / ".claude" / "settings.local.json"
    link.parent.mkdir()
    link.symlink_to(real)
    install.install_claude(tmp_path, "project")
    assert link.is_symlink()
    assert "hooks" in json.loads(real.read_text())


def test_codex_install_writes_hooks_json_and_uninstall_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    (tmp_path / "codex-home").mkdir()
    (tmp_path / "codex-home" / "config.toml").write_text("[features]\nhooks = false\n")
    path = tmp_path / ".codex" / "hooks.json"
    foreign = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]}}
    original = _write(path, foreign)
    res = install.install_codex(tmp_path)
    data = json.loads(path.read_text())
    assert data["hooks"]["Stop"] == foreign["hooks"]["Stop"]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == (
        f"{EXE} hooks run user-prompt-submit --codex"
    )
    assert any(p.code == "codex_feature_flag" for p in res.problems)
    assert not install.install_codex(tmp_path).data["changed"]
    install.uninstall_codex(tmp_path)
    assert path.read_bytes() == original


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("contextfork hook user-prompt-submit", True),
        ("/home/u/.local/bin/contextfork hook pre-compact --codex", True),
        ("contextfork statusline", True),
        ("mycontextfork hook pre-compact", False),
        ("contextfork export", False),
        ("echo contextfork", False),
    ],
)
def test_our_entries_are_recognised_by_command(command: str, ours: bool) -> None:
    assert install.is_ours(command) is ours


def test_the_cli_installs_and_uninstalls_through_hooks_cmds(tmp_path: Path) -> None:
    from tests.helpers import cli, make_repo

    repo = make_repo(tmp_path / "repo")
    cfg = tmp_path / "claude-home"
    env = {"CLAUDE_CONFIG_DIR": str(cfg)}
    _write(cfg / "settings.json", FOREIGN)
    original = (cfg / "settings.json").read_bytes()
    first = cli("hooks", "install", "--claude", "--user", "--json", cwd=repo.path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.json()["data"]["changed"] is True
    again = cli("hooks", "install", "--claude", "--user", "--json", cwd=repo.path, env=env)
    assert again.json()["data"]["changed"] is False
    gone = cli("hooks", "uninstall", "--claude", "--user", cwd=repo.path, env=env)
    assert gone.returncode == 0, gone.stderr
    assert (cfg / "settings.json").read_bytes() == original


@pytest.mark.parametrize("odd", [{"hooks": 7}, {"hooks": None}, {"hooks": "x"}, 5])
def test_odd_foreign_groups_are_kept_and_never_crash_the_install(
    tmp_path: Path, odd: object
) -> None:
    from tests.helpers import cli, make_repo

    repo = make_repo(tmp_path / "repo")
    settings = repo.path / ".claude" / "settings.local.json"
    original = _write(settings, {"hooks": {"UserPromptSubmit": [odd]}})
    res = cli("hooks", "install", "--claude", "--project", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    groups = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert groups[0] == odd and len(groups) == 2
    gone = cli("hooks", "uninstall", "--claude", "--project", cwd=repo.path)
    assert gone.returncode == 0, gone.stderr
    assert settings.read_bytes() == original
