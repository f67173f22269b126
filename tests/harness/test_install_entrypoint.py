"""Hook commands are installed by absolute path, so a harness started without the venv runs them.

Claude Code and Codex run each hook command through a shell with *their* PATH. A bare
`contextfork` works only when the venv happens to be on that PATH; otherwise every hook exits
127 and nothing reaches hooks.log. These tests run the installed command strings themselves,
through /bin/sh, with a PATH that does not contain the venv.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from contextfork import __version__
from contextfork.harness.hooks import install
from tests.harness import cc_fixture
from tests.helpers import Repo, clean_env, run_cli

BARE_PATH = "/usr/bin:/bin"
pytestmark = pytest.mark.skipif(os.name == "nt", reason="runs the commands through /bin/sh")


def _bare_env(home: Path) -> dict[str, str]:
    """What a harness started from a shell without the venv passes to its hooks."""
    server = {k: v for k, v in os.environ.items() if k.startswith("CONTEXTFORK_SERVER")}
    return {"PATH": BARE_PATH, "HOME": str(home), "LANG": "C.UTF-8", **server}


def _sh(command: str, cwd: Path, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=_bare_env(home), input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def _commands(settings: dict[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    hooks = settings["hooks"]
    assert isinstance(hooks, dict)
    for event, groups in hooks.items():
        for g in groups:
            for h in g["hooks"]:
                if install.is_ours(h["command"]):
                    out[event] = h["command"]
    sl = settings.get("statusLine")
    if isinstance(sl, dict):
        out["statusLine"] = sl["command"]
    return out


def _payload(repo: Repo, tmp_path: Path, event: str, **extra: str) -> str:
    t = tmp_path / "proj" / "t.jsonl"
    if not t.exists():
        cc_fixture.write(t, repo.path, context_tokens=61_000)
    return json.dumps({"session_id": cc_fixture.SESSION, "transcript_path": str(t),
                       "cwd": str(repo.path), "hook_event_name": event, **extra})  # fmt: skip


def test_the_bare_path_really_lacks_contextfork() -> None:
    assert shutil.which("contextfork", path=BARE_PATH) is None


def test_contextfork_version_prints_the_version_without_the_typer_app() -> None:
    res = run_cli("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"contextfork {__version__}"


def test_claude_hooks_and_statusline_run_without_the_venv_on_path(repo: Repo, tmp_path: Path) -> None:
    res = run_cli("hooks", "install", "--claude", "--project", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    settings = json.loads((repo.path / ".claude" / "settings.local.json").read_text())
    commands = _commands(settings)
    assert set(commands) == {"UserPromptSubmit", "PreCompact", "SessionStart", "SubagentStart",
                             "SubagentStop", "statusLine"}
    for cmd in commands.values():
        assert os.path.isabs(shlex.split(cmd)[0]), cmd
    home = tmp_path / "home"
    home.mkdir()
    ups = _sh(commands["UserPromptSubmit"], repo.path, home,
              _payload(repo, tmp_path, "UserPromptSubmit", prompt="billing_gateway_timeout?"))
    assert ups.returncode == 0, ups.stderr
    log = (repo.path / ".contextfork" / "logs" / "hooks.log").read_text()
    assert '"user-prompt-submit"' in log or "UserPromptSubmit" in log
    start = _sh(commands["SessionStart"], repo.path, home,
                _payload(repo, tmp_path, "SessionStart", source="startup"))
    assert start.returncode == 0, start.stderr
    line = _sh(commands["statusLine"], repo.path, home, json.dumps({"cwd": str(repo.path)}))
    assert line.returncode == 0 and line.stdout.strip(), line.stderr
    assert "not found" not in line.stdout + line.stderr


def test_codex_hooks_run_without_the_venv_on_path(
    repo: Repo, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    res = run_cli("hooks", "install", "--codex", "--json", cwd=repo.path,
                  env={"CODEX_HOME": str(home)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    hooks = json.loads((repo.path / ".codex" / "hooks.json").read_text())
    commands = _commands(hooks)
    assert set(commands) == {"UserPromptSubmit", "PreCompact", "SessionStart", "SubagentStart",
                             "SubagentStop"}
    for cmd in commands.values():
        assert os.path.isabs(shlex.split(cmd)[0]) and cmd.endswith("--codex"), cmd
    out = _sh(commands["UserPromptSubmit"], repo.path, home,
              _payload(repo, tmp_path, "UserPromptSubmit", prompt="hello"))
    assert out.returncode == 0, out.stderr
    assert (repo.path / ".contextfork" / "logs" / "hooks.log").is_file()


def test_install_reports_the_command_it_checked(repo: Repo) -> None:
    res = run_cli("hooks", "install", "--claude", "--project", "--json", cwd=repo.path)
    data = res.json()["data"]
    prefix = data["command"]
    assert os.path.isabs(shlex.split(prefix)[0])
    assert not any(p["code"] == "not_on_path" for p in res.json()["problems"])


def _spaced_venv(tmp_path: Path, with_script: bool, quoted: bool = True) -> Path:
    """A venv under a directory with a space that sees this checkout's contextfork.

    Its python finds our packages through a .pth that adds this venv's site-packages as a site
    dir (so the editable install's own .pth runs too). With ``with_script`` it also gets a
    ``contextfork`` console script written by pip's own script maker (the same launcher pip
    writes on install: a /bin/sh trampoline when the interpreter path has a space).
    """
    venv = tmp_path / "my tools" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    ours = sysconfig.get_path("purelib")
    Path(purelib, "zz_contextfork_test.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    if with_script:
        scripts: Any = importlib.import_module("pip._vendor.distlib.scripts")  # untyped

        maker = scripts.ScriptMaker(None, str(venv / "bin"))
        maker.executable = scripts.enquote_executable(str(py)) if quoted else str(py)
        maker.variants = {""}
        maker.make("contextfork = contextfork.entry:main")
    return py


@pytest.mark.parametrize("with_script", [True, False], ids=["console-script", "python-m"])
def test_a_venv_path_with_a_space_is_quoted_for_the_shell(
    repo: Repo, tmp_path: Path, with_script: bool
) -> None:
    py = _spaced_venv(tmp_path, with_script)
    proc = subprocess.run([str(py), "-m", "contextfork", "hooks", "install", "--claude",
                           "--project", "--json"], cwd=repo.path, env=clean_env(),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    commands = _commands(json.loads((repo.path / ".claude" / "settings.local.json").read_text()))
    first = shlex.split(commands["UserPromptSubmit"])[0]
    assert " " in first and first.startswith(str(tmp_path / "my tools"))
    assert first.endswith("/contextfork") is with_script
    home = tmp_path / "home"
    home.mkdir()
    res = _sh(commands["UserPromptSubmit"], repo.path, home,
              _payload(repo, tmp_path, "UserPromptSubmit", prompt="x"))
    assert res.returncode == 0, res.stderr
    assert (repo.path / ".contextfork" / "logs" / "hooks.log").is_file()
    # the same install recognises (and removes) what it wrote
    gone = subprocess.run([str(py), "-m", "contextfork", "hooks", "uninstall", "--claude",
                           "--project"], cwd=repo.path, env=clean_env(), capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert gone.returncode == 0, gone.stderr
    assert not (repo.path / ".claude" / "settings.local.json").exists()


def test_a_console_script_that_does_not_run_falls_back_to_python_m(tmp_path: Path) -> None:
    """A launcher written with an unquoted spaced interpreter path fails (`exec: /…/my: not
    found`); the check sees it and installs `<python> -m contextfork` instead."""
    from contextfork.harness.hooks import entrypoint

    py = _spaced_venv(tmp_path, with_script=True, quoted=False)
    command = entrypoint.checked_command(python=str(py))
    assert shlex.split(command) == [str(py), "-m", "contextfork"]


def test_an_older_bare_install_is_upgraded_and_uninstall_removes_both_forms(
    tmp_path: Path,
) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    old = {"model": "opus",
           "hooks": {event: [{"hooks": [{"type": "command", "command": cmd, "timeout": t}]}]
                     for event, (cmd, t) in {
                         "UserPromptSubmit": ("contextfork hook user-prompt-submit", 10),
                         "PreCompact": ("contextfork hook pre-compact", 120),
                         "SessionStart": ("contextfork hook session-start", 30)}.items()},
           "statusLine": {"type": "command", "command": "contextfork statusline", "padding": 0}}  # fmt: skip
    settings.write_text(json.dumps(old, indent=2) + "\n")
    res = install.install_claude(tmp_path, "project")
    assert {e: s for e, s in res.data["events"].items() if not e.startswith("Subagent")} == {
        "UserPromptSubmit": "updated", "PreCompact": "updated", "SessionStart": "updated"}
    assert res.data["statusline"] == "updated"
    now = _commands(json.loads(settings.read_text()))
    assert all(os.path.isabs(shlex.split(c)[0]) for c in now.values())
    assert not install.install_claude(tmp_path, "project").data["changed"]
    gone = install.uninstall_claude(tmp_path, "project")
    assert gone.data["statusline_removed"]
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_uninstall_removes_a_bare_entry_left_by_an_older_version(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    old = {"hooks": {"PreCompact": [{"hooks": [
        {"type": "command", "command": "contextfork hook pre-compact", "timeout": 120}]}]},
        "statusLine": {"type": "command", "command": "contextfork statusline"}}  # fmt: skip
    settings.write_text(json.dumps(old, indent=2) + "\n")
    gone = install.uninstall_claude(tmp_path, "project")
    assert gone.data["removed"] == {"PreCompact": 1} and gone.data["statusline_removed"]


@pytest.mark.parametrize(
    "command",
    [
        "'/home/u/my tools/venv/bin/contextfork' hook user-prompt-submit",
        "'/home/u/my tools/venv/bin/python' -m contextfork hook pre-compact --codex",
        "/opt/venv/bin/python -m contextfork statusline",
        '"C:\\Program Files\\cf\\contextfork.exe" hook session-start',
    ],
)
def test_quoted_absolute_commands_are_recognised_as_ours(command: str) -> None:
    assert install.is_ours(command)


def test_install_refuses_when_the_entry_point_does_not_run(
    repo: Repo, tmp_path: Path
) -> None:
    """An interpreter that cannot import contextfork would install hooks that all fail."""
    venv = tmp_path / "broken"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    from contextfork.errors import CheckFailed
    from contextfork.harness.hooks import entrypoint

    with pytest.raises(CheckFailed):
        entrypoint.checked_command(python=str(venv / "bin" / "python"))
