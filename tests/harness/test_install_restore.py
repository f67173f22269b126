"""Uninstall puts back exactly what was there: bytes when untouched, containers when edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.harness.hooks import install
from tests.helpers import Repo, run_cli

EMPTY_HOOKS = {"model": "opus", "hooks": {}, "permissions": {"allow": []}}


def _put(path: Path, data: bytes) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


@pytest.mark.parametrize(
    "original",
    [
        (json.dumps(EMPTY_HOOKS, indent=2) + "\n").encode(),
        json.dumps(EMPTY_HOOKS, indent=4).encode(),  # 4 spaces, no final newline
        (json.dumps(EMPTY_HOOKS, indent="\t") + "\n").replace("\n", "\r\n").encode(),  # tabs, CRLF
        b'{"hooks":{},"model":"opus"}',  # compact
        b'{\n  "hooks": {"UserPromptSubmit": []},\n  "model": "\\u00e9t\\u00e9"\n}\n',
    ],
    ids=["indent2", "indent4-no-newline", "tabs-crlf", "compact", "empty-event-list-escapes"],
)
def test_uninstall_restores_the_original_bytes(tmp_path: Path, original: bytes) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    _put(settings, original)
    install.install_claude(tmp_path, "project")
    assert settings.read_bytes() != original
    res = install.uninstall_claude(tmp_path, "project")
    assert res.data["restored"] == "original_bytes"
    assert settings.read_bytes() == original


def test_install_keeps_the_files_indent_and_line_endings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    _put(settings, (json.dumps(EMPTY_HOOKS, indent=4) + "\n").replace("\n", "\r\n").encode())
    install.install_claude(tmp_path, "project")
    text = settings.read_bytes().decode()
    assert '\r\n    "model": "opus",\r\n' in text and "\n\n" not in text.replace("\r\n", "\n")
    assert text.endswith("}\r\n") and "\n" not in text.replace("\r\n", "")


def test_an_edited_file_keeps_the_empty_hooks_object_and_the_edit(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    _put(settings, (json.dumps({**EMPTY_HOOKS, "hooks": {"Stop": []}}, indent=2) + "\n").encode())
    install.install_claude(tmp_path, "project")
    data = json.loads(settings.read_text())
    data["env"] = {"ADDED": "after install"}  # the user edits the file in between
    settings.write_text(json.dumps(data, indent=2) + "\n")
    res = install.uninstall_claude(tmp_path, "project")
    assert res.data["restored"] == "entries_removed"
    expected = {**EMPTY_HOOKS, "hooks": {"Stop": []}, "env": {"ADDED": "after install"}}
    assert settings.read_text() == json.dumps(expected, indent=2) + "\n"


def test_without_a_record_uninstall_still_removes_only_ours(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    original = _put(settings, (json.dumps({"model": "opus"}, indent=2) + "\n").encode())
    install.install_claude(tmp_path, "project")
    for rec in (tmp_path / ".contextfork" / "harness" / "installs").iterdir():
        rec.unlink()  # e.g. .contextfork/ was wiped: fall back to the structural removal
    install.uninstall_claude(tmp_path, "project")
    assert settings.read_bytes() == original


def test_a_created_settings_dir_with_other_files_stays(tmp_path: Path) -> None:
    keep = _put(tmp_path / ".claude" / "commands" / "x.md", b"# mine\n")
    install.install_claude(tmp_path, "project")
    res = install.uninstall_claude(tmp_path, "project")
    assert res.data["restored"] == "file_removed"
    assert not (tmp_path / ".claude" / "settings.local.json").exists()
    assert (tmp_path / ".claude" / "commands" / "x.md").read_bytes() == keep


def test_user_scope_record_lives_beside_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "claude-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    original = _put(cfg / "settings.json", b'{\n  "hooks": {}\n}\n')
    install.install_claude(tmp_path / "repo", "user")
    assert list((cfg / ".contextfork-install").iterdir())
    install.uninstall_claude(tmp_path / "elsewhere", "user")  # uninstalled from another repo
    assert (cfg / "settings.json").read_bytes() == original
    assert sorted(p.name for p in cfg.iterdir()) == ["settings.json"]


def test_cli_project_install_uninstall_is_byte_exact_and_keeps_git_clean(repo: Repo) -> None:
    original = b'{\n    "hooks": {},\n    "permissions": {"deny": ["Read(./.env)"]}\n}'
    repo.write(".claude/settings.json", original)
    repo.commit_all("team settings")
    res = run_cli("hooks", "install", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    # the team's committed file is untouched; this machine's file and the record stay hidden
    # (the /handoff command is new and portable: it may be committed)
    assert repo.git("status", "--porcelain") == "?? .claude/commands/"
    assert (repo.path / ".claude" / "settings.local.json").is_file()
    assert (repo.path / ".contextfork" / "harness" / "installs").is_dir()
    res = run_cli("hooks", "uninstall", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["restored"] == "file_removed"
    assert (repo.path / ".claude" / "settings.json").read_bytes() == original
    assert repo.git("status", "--porcelain") == ""


def test_an_install_from_before_records_is_not_restored_with_our_old_entries(
    tmp_path: Path,
) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    old_entry = {"hooks": [{"type": "command", "command": "contextfork hook pre-compact",
                            "timeout": 5}]}  # fmt: skip
    _put(settings, (json.dumps({"model": "opus", "hooks": {"PreCompact": [old_entry]}},
                               indent=2) + "\n").encode())  # fmt: skip
    assert install.install_claude(tmp_path, "project").data["events"]["PreCompact"] == "updated"
    res = install.uninstall_claude(tmp_path, "project")
    assert res.data["restored"] == "entries_removed"
    assert json.loads(settings.read_text()) == {"model": "opus"}
