"""`contextfork doctor`: one line per check (ok / warning / error) with the fix; exit 1 on an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextfork import doctor
from contextfork.cold.scenario import build_reference_scenario
from contextfork.harness.hooks import install
from tests.helpers import Repo, run_cli


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user's Claude settings out of it."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))


def checks(root: Path | None) -> dict[str, dict[str, Any]]:
    res = doctor.run(root)
    return {c["name"]: c for c in res.data["checks"]}


def test_doctor_on_a_healthy_repository_is_all_ok_and_exits_zero(repo: Repo, tmp_path: Path) -> None:
    res = run_cli("doctor", "--json", cwd=repo.path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert res.returncode == 0, res.stdout + res.stderr
    env = res.json()
    assert env["command"] == "doctor" and env["ok"]
    by = {c["name"]: c for c in env["data"]["checks"]}
    assert {"contextfork", "git", "repo", "hooks git", "hooks claude project",
            "hooks claude user", "hooks codex", "policy", "cold", "tokenizer",
            "mcp"} <= set(by)  # fmt: skip
    assert by["git"]["status"] == "ok" and by["git"]["detail"].startswith("git version")
    assert by["repo"]["status"] == "ok" and "on main" in by["repo"]["detail"]
    assert by["hooks claude project"]["detail"].startswith("not installed")
    assert by["mcp"]["status"] == "ok"  # the dev extra installs it
    assert env["data"]["counts"]["error"] == 0
    text = run_cli("doctor", cwd=repo.path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert text.stdout.splitlines()[0].startswith("ok      contextfork")


def test_doctor_outside_a_repository_is_an_error_with_the_fix(tmp_path: Path) -> None:
    res = run_cli("doctor", cwd=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert res.returncode == 1
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("error"))
    assert "repo" in line and "not a git repository" in line
    # the fix line may wrap at the terminal width
    assert "fix: run inside a git repository or pass --repo PATH" in " ".join(res.stdout.split())


def test_doctor_warns_about_an_unborn_head(empty_repo: Repo) -> None:
    got = checks(empty_repo.path)["repo"]
    assert got["status"] == "warning" and "unborn" in got["detail"]
    assert got["fix"] == "make a first commit"


def test_doctor_warns_about_a_detached_head(repo: Repo) -> None:
    repo.git("checkout", "-q", "--detach")
    got = checks(repo.path)["repo"]
    assert got["status"] == "warning" and "detached HEAD" in got["detail"]
    assert "git switch -c" in got["fix"]


def test_doctor_warns_about_a_merge_in_progress(repo: Repo) -> None:
    repo.conflicting_merge("README.md")  # the merge stays in progress
    got = checks(repo.path)["repo"]
    assert got["status"] == "warning" and "merge is in progress" in got["detail"]
    assert "git merge --abort" in got["fix"]


def test_doctor_sees_installed_claude_hooks_and_that_their_command_runs(repo: Repo) -> None:
    install.install_claude(repo.path, "project")
    got = checks(repo.path)["hooks claude project"]
    assert got["status"] == "ok", got
    assert "5/5 hooks + statusLine" in got["detail"] and "commands run" in got["detail"]


def test_doctor_names_the_subagent_hooks_an_older_install_lacks(repo: Repo) -> None:
    install.install_claude(repo.path, "project")
    settings = repo.path / ".claude" / "settings.local.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["SubagentStart"], data["hooks"]["SubagentStop"]
    settings.write_text(json.dumps(data))
    got = checks(repo.path)["hooks claude project"]
    assert got["status"] == "warning" and "missing SubagentStart, SubagentStop" in got["detail"]
    assert got["fix"] == "contextfork hooks install --claude"


def test_doctor_reports_a_hook_command_that_does_not_run(repo: Repo) -> None:
    settings = repo.path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreCompact": [{"hooks": [
        {"type": "command", "command": "/gone/venv/bin/contextfork hooks run pre-compact"}]}]}}))  # fmt: skip
    res = doctor.run(repo.path)
    got = {c["name"]: c for c in res.data["checks"]}["hooks claude project"]
    assert got["status"] == "error" and "does not run" in got["detail"]
    assert got["fix"] == "reinstall from this environment: contextfork hooks install --claude"
    assert res.exit_code == 1


def test_doctor_flags_legacy_hook_entries_with_the_upgrade(repo: Repo) -> None:
    install.install_claude(repo.path, "project")
    settings = repo.path / ".claude" / "settings.local.json"
    settings.write_text(settings.read_text().replace(" hooks run ", " hook "))
    got = checks(repo.path)["hooks claude project"]
    assert got["status"] == "warning" and "legacy `hook <event>`" in got["detail"]
    assert "upgrades them to `hooks run <event>`" in got["fix"]


def test_doctor_sees_git_hooks_and_their_interpreter(repo: Repo) -> None:
    from contextfork.lifecycle import githooks

    assert checks(repo.path)["hooks git"]["detail"] == "not installed"
    githooks.install(repo.path)
    assert checks(repo.path)["hooks git"]["status"] == "ok"
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    text = hook.read_text()
    start = text.index(" -m contextfork.lifecycle.gitrun")
    line_start = text.rindex("\n", 0, start) + 1
    hook.write_text(text[:line_start] + "/gone/bin/python" + text[start:])
    got = checks(repo.path)["hooks git"]
    assert got["status"] == "error" and "/gone/bin/python" in got["detail"]


def test_doctor_reports_an_invalid_policy_and_a_broken_cold_store(repo: Repo) -> None:
    build_reference_scenario(repo.path / ".contextfork" / "cold" / "s1")
    healthy = checks(repo.path)
    assert healthy["cold s1"]["status"] == "ok"
    assert healthy["cold s1"]["detail"].startswith("8 nodes, 0 errors")
    node = repo.path / ".contextfork" / "cold" / "s1" / "cold_nodes" / "step_000005.json"
    node.write_text(node.read_text().replace("accepting connections", "accepting connexions"))
    (repo.path / ".contextfork" / "policy.json").write_text('{"tokens": {"warning": -1}}')
    res = doctor.run(repo.path)
    got = {c["name"]: c for c in res.data["checks"]}
    assert got["cold s1"]["status"] == "error"
    assert "fold validate --session s1" in got["cold s1"]["fix"]
    assert got["policy"]["status"] == "error" and "tokens.warning" in got["policy"]["detail"]
    assert res.exit_code == 1


def test_doctor_checks_the_tokenizer_cache(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextfork import tokens

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert checks(repo.path)["tokenizer"]["status"] == "warning"
    path, _ = tokens.cache_status()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not the vocabulary")
    path.with_suffix(".sha256").write_text("0" * 64 + "\n")
    got = checks(repo.path)["tokenizer"]
    assert got["status"] == "warning" and "fails its sha256" in got["detail"]
