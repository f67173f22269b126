"""`hooks install --codex` turns on Codex's hooks feature in .codex/config.toml, minimally."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from contextfork.harness.hooks import codex_config, install
from tests.helpers import Repo, run_cli

MARK = codex_config.MARK

CONFIG = """# project settings for Codex
model = "gpt-5-codex"   # keep this comment

[features]
# experiments we rely on
web_search_request = true

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]
"""


@pytest.fixture
def codex_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty CODEX_HOME and a fake `codex` (0.150.0) first on PATH."""
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    _fake_codex(tmp_path / "bin", "codex-cli 0.150.0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return home


def _fake_codex(bindir: Path, version: str) -> None:
    bindir.mkdir(exist_ok=True)
    exe = bindir / "codex"
    exe.write_text(f"#!/bin/sh\necho '{version}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def _cfg(root: Path) -> Path:
    return root / ".codex" / "config.toml"


def test_flag_is_added_under_the_existing_features_table_and_nothing_else_moves(
    tmp_path: Path, codex_env: Path
) -> None:
    cfg = _cfg(tmp_path)
    cfg.parent.mkdir()
    cfg.write_text(CONFIG)
    res = install.install_codex(tmp_path)
    assert res.data["feature_flag"]["state"] == "added"
    assert res.data["feature_flag"]["key"] == "hooks"
    text = cfg.read_text()
    # one line added, at the end of the table; every comment and every other line unchanged
    assert text == CONFIG.replace("web_search_request = true\n", f"web_search_request = true\nhooks = true  {MARK}\n")
    parsed = tomllib.loads(text)
    assert parsed["features"] == {"hooks": True, "web_search_request": True}
    assert parsed["mcp_servers"] == tomllib.loads(CONFIG)["mcp_servers"]
    again = install.install_codex(tmp_path)
    assert again.data["feature_flag"]["state"] == "enabled" and not again.data["changed"]
    assert cfg.read_text() == text
    out = install.uninstall_codex(tmp_path)
    assert out.data["feature_flag"]["state"] == "original_bytes"
    assert cfg.read_text() == CONFIG


@pytest.mark.parametrize(
    "original",
    ["", "model = 'o3'", "model = 'o3'\n", "model = 'o3'\n\n", 'a = 1\r\n[tools]\r\nx = "y"\r\n'],
    ids=["empty", "no-newline", "newline", "blank-line", "crlf-with-table"],
)
def test_a_features_table_is_appended_and_removed_exactly(
    tmp_path: Path, codex_env: Path, original: str
) -> None:
    cfg = _cfg(tmp_path)
    cfg.parent.mkdir()
    cfg.write_bytes(original.encode())
    install.install_codex(tmp_path)
    new = cfg.read_bytes().decode()
    assert tomllib.loads(new)["features"] == {"hooks": True}
    assert new.startswith(original)
    if "\r\n" in original:
        assert "\n" not in new.replace("\r\n", "")
    install.uninstall_codex(tmp_path)
    assert cfg.read_bytes() == original.encode()


def test_user_edits_after_install_survive_uninstall(tmp_path: Path, codex_env: Path) -> None:
    cfg = _cfg(tmp_path)
    cfg.parent.mkdir()
    cfg.write_text("model = 'o3'\n")
    install.install_codex(tmp_path)
    edited = cfg.read_text() + "\n[profiles.fast]\nmodel = 'o4-mini'\n"
    cfg.write_text(edited)
    res = install.uninstall_codex(tmp_path)
    assert res.data["feature_flag"]["state"] == "flag_removed"
    assert cfg.read_text() == "model = 'o3'\n\n[profiles.fast]\nmodel = 'o4-mini'\n"


def test_a_feature_the_user_added_under_our_table_keeps_the_table(
    tmp_path: Path, codex_env: Path
) -> None:
    cfg = _cfg(tmp_path)
    cfg.parent.mkdir()
    cfg.write_text("model = 'o3'\n")
    install.install_codex(tmp_path)
    cfg.write_text(cfg.read_text() + "memory = true\n")
    install.uninstall_codex(tmp_path)
    text = cfg.read_text()
    assert tomllib.loads(text) == {"model": "o3", "features": {"memory": True}}
    assert text == f"model = 'o3'\n\n[features]  {MARK}\nmemory = true\n"  # header stays


def test_no_config_creates_it_and_uninstall_removes_codex_dir(
    tmp_path: Path, codex_env: Path
) -> None:
    install.install_codex(tmp_path)
    assert tomllib.loads(_cfg(tmp_path).read_text()) == {"features": {"hooks": True}}
    install.uninstall_codex(tmp_path)
    assert not (tmp_path / ".codex").exists()


@pytest.mark.parametrize(
    ("project", "user", "state"),
    [
        ("[features]\nhooks = false\n", None, "disabled_here"),
        ("[features]\ncodex_hooks = false\n", None, "disabled_here"),
        ("[features]\ncodex_hooks = true\n", None, "enabled"),
        (None, "[features]\nhooks = false\n", "disabled_in_user_config"),
        (None, "[features]\nhooks = true\n", "enabled_in_user_config"),
        ("features = { memory = true }\n", None, "not_editable"),
        ("features.memory = true\n", None, "not_editable"),
        ("[features.experimental]\nmemory = true\n", None, "not_editable"),
        ("[features\nbroken", None, "not_editable"),
    ],
)
def test_explicit_settings_and_uneditable_forms_are_left_alone(
    tmp_path: Path, codex_env: Path, project: str | None, user: str | None, state: str
) -> None:
    cfg = _cfg(tmp_path)
    if project is not None:
        cfg.parent.mkdir()
        cfg.write_text(project)
    if user is not None:
        (codex_env / "config.toml").write_text(user)
    res = install.install_codex(tmp_path)
    assert res.data["feature_flag"]["state"] == state
    warned = any(p.code == "codex_feature_flag" for p in res.problems)
    assert warned == (state not in ("enabled", "enabled_in_user_config"))
    assert (cfg.read_text() if project is not None else None) == project
    install.uninstall_codex(tmp_path)
    assert (cfg.read_text() if cfg.exists() else None) == project


def test_cli_with_an_older_codex_writes_codex_hooks_and_removes_it(
    repo: Repo, tmp_path: Path
) -> None:
    _fake_codex(tmp_path / "oldbin", "codex-cli 0.120.3")
    (tmp_path / "home").mkdir()
    env = {
        "PATH": f"{tmp_path / 'oldbin'}{os.pathsep}{os.environ['PATH']}",
        "CODEX_HOME": str(tmp_path / "home"),
    }
    repo.write(".codex/config.toml", CONFIG)
    repo.commit_all("codex config")
    res = run_cli("hooks", "install", "--codex", "--json", cwd=repo.path, env=env)
    assert res.returncode == 0, res.stderr
    flag = res.json()["data"]["feature_flag"]
    assert flag == {"path": str(repo.path / ".codex/config.toml"), "state": "added",
                    "key": "codex_hooks"}  # fmt: skip
    assert tomllib.loads((repo.path / ".codex/config.toml").read_text())["features"] == {
        "codex_hooks": True,
        "web_search_request": True,
    }
    diff = repo.git("diff", "--unified=0", "--", ".codex/config.toml").splitlines()
    assert [ln for ln in diff if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] == [
        f"+codex_hooks = true  {MARK}"
    ]
    text = run_cli("hooks", "install", "--codex", cwd=repo.path, env=env).stdout
    assert "already on" in text
    res = run_cli("hooks", "uninstall", "--codex", "--json", cwd=repo.path, env=env)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["feature_flag"]["state"] == "original_bytes"
    assert repo.git("status", "--porcelain") == ""


# A config as people keep it: comments everywhere, profiles, MCP servers, a multi-line prompt
# (one of whose lines looks like a table header), inline tables, arrays, odd spacing.
REAL = """# Codex settings for this repository (reviewed in PR #412)
model = "gpt-5-codex"          # the team default
approval_policy = "on-request"
developer_instructions = \"\"\"
Run the tests before you commit.
[features]
(the line above is text, not a table)
\"\"\"

[features]   # what we turn on
web_search_request = true # needed for docs lookups
  # unified_exec = true  (off until it settles)

[profiles.fast]
model = "gpt-5-mini"
model_reasoning_effort = "low"

[mcp_servers.docs]
command = "docs-mcp"
args = [
  "--stdio",   # talk over stdin/stdout
  "--root", "docs",
]
env = { DOCS_TOKEN_FILE = "~/.docs-token" }

[[skills]]
name = "release"
"""


def test_a_real_config_keeps_every_comment_and_table_through_install_and_uninstall(
    repo: Repo, codex_env: Path
) -> None:
    repo.write(".codex/config.toml", REAL)
    repo.commit_all("codex config")
    res = install.install_codex(repo.path)
    assert res.data["feature_flag"]["state"] == "added"
    text = _cfg(repo.path).read_text()
    assert tomllib.loads(text) == {**tomllib.loads(REAL), "features": {
        "web_search_request": True, "hooks": True}}  # fmt: skip
    diff = repo.git("diff", "--unified=0", "--", ".codex/config.toml").splitlines()
    assert [ln for ln in diff if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] == [
        f"+hooks = true  {MARK}"
    ]
    # Edited since install (so no byte-exact restore): only our line goes.
    _cfg(repo.path).write_text(text + "\n[profiles.deep]\nmodel = \"gpt-5\"  # for reviews\n")
    assert install.uninstall_codex(repo.path).data["feature_flag"]["state"] == "flag_removed"
    assert _cfg(repo.path).read_text() == REAL + "\n[profiles.deep]\nmodel = \"gpt-5\"  # for reviews\n"
