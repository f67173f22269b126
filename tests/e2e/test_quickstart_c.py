"""Quick start C with the real clients: export on machine A → push (with the cold store) →
clone → pull → ``resume --apply`` on machine B → a fresh Claude Code / Codex session there gets
the brief in its first request, once; ``fold hydrate`` pages from the cold store in the clone.
The hooks run the contextfork under test."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import contextfork
from contextfork.harness.hooks import install
from tests.e2e.mock_anthropic import Reply, Usage
from tests.e2e.mock_openai import OAReply, input_text
from tests.e2e.rigs import ClaudeRig, CodexRig
from tests.harness import cc_fixture
from tests.helpers import Repo, cli, git, make_repo

CF_ROOT = Path(contextfork.__file__).resolve().parents[1]
CF = f"PYTHONPATH={shlex.quote(str(CF_ROOT))} {shlex.quote(sys.executable)} -m contextfork"
SID = cc_fixture.SESSION
GOAL = "Finish the parser refactor before the release"


def _machine_a_then_b(tmp: Path, b_path: Path) -> tuple[Repo, str]:
    """Work and a cold store on A, shared through a bare remote; B is a fresh clone at
    ``b_path`` with the package pulled and applied. Returns (B, package id)."""
    a = make_repo(tmp / "machine-a" / "project")
    transcript = cc_fixture.write(tmp / "machine-a" / f"{SID}.jsonl", a.path)
    assert cli("fold", "session", "--transcript", str(transcript), "--session", SID,
               cwd=a.path).returncode == 0  # fmt: skip
    a.write("src/app.py", "def main():\n    return 2  # refactored\n")
    a.write("notes/plan.txt", "parser: split the tokenizer\n")
    out = cli("export", "--goal", GOAL, "--transcript", str(transcript), "--json", cwd=a.path)
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    remote = tmp / "remote.git"
    git(tmp, "clone", "-q", "--bare", str(a.path), str(remote))
    a.git("remote", "add", "origin", str(remote))
    assert cli("push", "origin", "--with-cold", cwd=a.path).returncode == 0
    shutil.rmtree(b_path)
    git(tmp, "clone", "-q", str(remote), str(b_path))
    b = Repo(b_path)
    b.git("config", "user.email", "e2e@example.com")
    b.git("config", "user.name", "E2E")
    assert cli("pull", "origin", "--with-cold", cwd=b.path).returncode == 0
    res = cli("resume", pid, "--apply", "--json", cwd=b.path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (b.path / "notes" / "plan.txt").read_text() == "parser: split the tokenizer\n"
    hydrate = cli("fold", "hydrate", "2", "--session", SID, cwd=b.path)
    assert hydrate.returncode == 0 and "5434 != 5433" in hydrate.stdout, hydrate.stderr
    peek = cli("context", "peek", "--step", "2", "--session", SID, cwd=b.path)
    assert peek.returncode == 0 and "5434 != 5433" in peek.stdout, peek.stdout + peek.stderr
    return b, pid


def test_quick_start_c_reaches_a_fresh_claude_code_session_in_the_clone(
    claude: ClaudeRig,
) -> None:
    b, pid = _machine_a_then_b(claude.tmp, claude.repo.path)
    install.install_claude(b.path, "project", command=CF)
    claude.trust_project()
    claude.mock.script(Reply(text="On it.", usage=Usage(input_tokens=3000)),
                       Reply(text="Hello again.", usage=Usage(input_tokens=3000)))  # fmt: skip
    claude.prompt("Carry on.")
    first = json.dumps(claude.mock.main_requests()[0])
    assert pid in first and GOAL in first
    assert "resume --apply" in first and "cold store `.contextfork/cold/" in first
    claude.prompt("Another session.")
    assert pid not in json.dumps(claude.mock.main_requests()[-1])  # received once


def test_quick_start_c_reaches_a_fresh_codex_session_in_the_clone(codex: CodexRig) -> None:
    b, pid = _machine_a_then_b(codex.tmp, codex.repo.path)
    with (codex.codex_home / "config.toml").open("a") as f:
        f.write(f'\n[projects."{b.path.resolve()}"]\ntrust_level = "trusted"\n')
    assert cli("hooks", "install", "--codex", cwd=b.path, environ=codex.env).returncode == 0
    hooks = b.path / ".codex" / "hooks.json"
    data = json.loads(hooks.read_text())
    for groups in data["hooks"].values():
        for g in groups:
            for h in g["hooks"]:
                rest = h["command"].split(" hooks run ", 1)[1]
                h["command"] = f"{CF} hooks run {rest}"  # the contextfork under test
    hooks.write_text(json.dumps(data))
    codex.mock.script(OAReply(text="On it."))
    run = codex.run("exec", "--dangerously-bypass-hook-trust", "Carry on")
    assert run.returncode == 0, run
    text = input_text(codex.mock.response_requests()[0])
    assert pid in text and GOAL in text
