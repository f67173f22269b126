"""`contextfork hooks run <event>` is the runtime entry point; `hook <event>` is a legacy alias.

`hook` (run by the harness) and `hooks` (install/uninstall) were one letter apart. Now both live
under `hooks`; settings written by older versions still call `contextfork hook ...`, so that form
keeps working (hidden from --help), install upgrades it in place and uninstall removes both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextfork.cold.scenario import REFERENCE_QUESTION, build_reference_scenario
from contextfork.harness.hooks import install
from contextfork.harness.hooks.entrypoint import checked_command
from tests.helpers import Repo, clean_env, run_cli

EXE = checked_command()
SID = "sess-run-1"


def _prompt(repo: Repo) -> str:
    return json.dumps(
        {
            "session_id": SID,
            "transcript_path": str(repo.path / "missing.jsonl"),
            "cwd": str(repo.path),
            "hook_event_name": "UserPromptSubmit",
            "prompt": REFERENCE_QUESTION,
        }
    )


@pytest.fixture
def scenario_repo(repo: Repo) -> Repo:
    build_reference_scenario(repo.path / ".contextfork" / "cold" / SID)
    return repo


@pytest.mark.parametrize("argv", [("hooks", "run"), ("hook",)])
def test_hooks_run_and_the_legacy_hook_alias_both_inject(
    scenario_repo: Repo, argv: tuple[str, ...]
) -> None:
    res = run_cli(*argv, "user-prompt-submit", cwd=scenario_repo.path, input=_prompt(scenario_repo))
    assert res.returncode == 0, res.stderr
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ctx.count("<cold-step ") == 3


def test_hooks_run_is_dispatched_without_typer(scenario_repo: Repo) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "contextfork", "hooks", "run",
         "user-prompt-submit"],
        input=_prompt(scenario_repo), text=True, capture_output=True,
        cwd=scenario_repo.path, env=clean_env(), check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()}
    assert not modules & {"typer", "pydantic", "jinja2", "mcp", "click", "rich"}


def test_help_lists_hooks_run_and_hides_the_legacy_hook() -> None:
    top = run_cli("--help")
    assert top.returncode == 0
    names = {ln.split()[1] for ln in top.stdout.splitlines() if ln.startswith("│ ") and ln.split()[1:]}
    assert "hooks" in names and "hook" not in names
    sub = run_cli("hooks", "--help")
    assert "run" in sub.stdout and "install" in sub.stdout
    run = run_cli("hooks", "run", "--help")
    assert run.returncode == 0
    for event in ("user-prompt-submit", "pre-compact", "session-start"):
        assert event in run.stdout
    legacy = run_cli("hook", "--help")  # still documented, as the legacy alias
    assert legacy.returncode == 0 and "hooks run" in legacy.stdout


def test_install_writes_hooks_run_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install.install_claude(tmp_path, "project")
    data = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    for event, name in (("UserPromptSubmit", "user-prompt-submit"), ("PreCompact", "pre-compact"),
                        ("SessionStart", "session-start")):  # fmt: skip
        assert data["hooks"][event][0]["hooks"][0]["command"] == f"{EXE} hooks run {name}"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    install.install_codex(tmp_path)
    codex = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert codex["hooks"]["PreCompact"][0]["hooks"][0]["command"] == (
        f"{EXE} hooks run pre-compact --codex"
    )


def test_a_legacy_hook_entry_is_upgraded_in_place(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    theirs = {"hooks": [{"type": "command", "command": "notify.sh"}]}
    old = {"hooks": {"PreCompact": [
        {"hooks": [{"type": "command", "command": f"{EXE} hook pre-compact", "timeout": 120}]},
        theirs]}}  # fmt: skip
    settings.write_text(json.dumps(old, indent=2) + "\n")
    res = install.install_claude(tmp_path, "project")
    assert res.data["events"]["PreCompact"] == "updated"
    groups = json.loads(settings.read_text())["hooks"]["PreCompact"]
    assert groups == [
        {"hooks": [{"type": "command", "command": f"{EXE} hooks run pre-compact",
                    "timeout": 120}]},
        theirs,
    ]  # fmt: skip


def test_uninstall_removes_both_the_legacy_and_the_new_form(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    both = {"model": "opus", "hooks": {"PreCompact": [
        {"hooks": [{"type": "command", "command": "contextfork hook pre-compact"}]},
        {"hooks": [{"type": "command", "command": f"{EXE} hooks run pre-compact"}]}]}}  # fmt: skip
    settings.write_text(json.dumps(both, indent=2) + "\n")
    gone = install.uninstall_claude(tmp_path, "project")
    assert gone.data["removed"] == {"PreCompact": 2}
    assert json.loads(settings.read_text()) == {"model": "opus"}


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("contextfork hooks run user-prompt-submit", True),
        ("'/home/u/my tools/bin/contextfork' hooks run session-start --codex", True),
        ("/opt/py -m contextfork hooks run pre-compact", True),
        ("contextfork hooks install --claude", False),
        ("contextfork hooks run something-else", False),
        ("mycontextfork hooks run pre-compact", False),
    ],
)
def test_both_command_forms_are_recognised_as_ours(command: str, ours: bool) -> None:
    assert install.is_ours(command) is ours
