"""Real clients: a session exported on one "machine" (repo root A, CLAUDE_CONFIG_DIR or
CODEX_HOME A) resumes with ``claude --resume`` / ``codex exec resume`` on another (a clone at
root B, config B)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.clients import run_bounded
from tests.e2e.mock_anthropic import MockAnthropic, Reply, ToolUse, Usage
from tests.e2e.mock_openai import Call, OAReply, input_text
from tests.e2e.rigs import ClaudeRig, CodexRig
from tests.helpers import Repo, cli, git


def test_a_conversation_exported_on_machine_a_resumes_in_claude_on_machine_b(
    claude: ClaudeRig,
) -> None:
    a = claude.repo
    a.write("notes.txt", "marker=zorblax-42\n")
    a.commit_all("notes")
    cat = ToolUse("Bash", {"command": f"cat {a.path}/notes.txt", "description": "Read notes"})
    claude.mock.script(
        Reply(text="Reading the notes.", tool_uses=[cat], usage=Usage(input_tokens=3000)),
        Reply(text="The marker is zorblax-42.", usage=Usage(input_tokens=3300)),
    )
    sid = str(claude.prompt("What is the marker?")["session_id"])
    out = claude.contextfork_json("export", "--with-conversation", "--transcript", "auto")
    pid = out["data"]["package_id"]
    remote = claude.tmp / "remote.git"
    git(claude.tmp, "clone", "-q", "--bare", str(a.path), str(remote))
    a.git("remote", "add", "origin", str(remote))
    claude.contextfork("push", "origin")
    b = Repo(claude.tmp / "machine-b" / "project")
    git(claude.tmp, "clone", "-q", str(remote), str(b.path))
    conf_b = claude.tmp / "machine-b" / "claude-config"
    conf_b.mkdir()
    (conf_b / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "projects": {
        str(b.path.resolve()): {"hasTrustDialogAccepted": True}}}))  # fmt: skip
    env_b = {**claude.env, "CLAUDE_CONFIG_DIR": str(conf_b), "HOME": str(claude.tmp / "machine-b")}
    assert cli("pull", cwd=b.path, environ=env_b).returncode == 0
    res = cli("resume", pid, "--claude", "--json", cwd=b.path, environ=env_b)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["resume_command"] == f"claude --resume {sid}"
    before = len(claude.mock.main_requests())
    claude.mock.script(Reply(text="It was zorblax-42.", usage=Usage(input_tokens=3600)))
    run = run_bounded([str(claude.bin), "-p", "Which marker did we find?", "--resume", sid,
                       "--output-format", "json"], cwd=b.path, env=env_b, timeout=120)  # fmt: skip
    assert run.returncode == 0, run
    assert json.loads(run.stdout)["session_id"] == sid
    [asked] = claude.mock.main_requests()[before:]
    body = json.dumps(asked)
    assert "marker=zorblax-42" in body  # the tool result from machine A's session
    assert f"cat {b.path}/notes.txt" in body and f"{a.path}/notes.txt" not in body


def test_a_codex_rollout_exported_on_machine_a_resumes_in_codex_on_machine_b(
    codex: CodexRig,
) -> None:
    import re

    a = codex.repo
    a.write("notes.txt", "marker=quibble-77\n")
    a.commit_all("notes")
    codex.mock.script(
        OAReply(text="Reading.", calls=[Call("exec_command", {"cmd": f"cat {a.path}/notes.txt"})]),
        OAReply(text="The marker is quibble-77."),
    )
    first = codex.run("exec", "What is the marker?")
    assert first.returncode == 0, first
    match = re.search(r"session id: ([0-9a-f-]{36})", first.stderr)
    assert match, first.stderr[-2000:]
    sid = match.group(1)
    [rollout] = [p for p in (codex.codex_home / "sessions").rglob("*.jsonl") if sid in p.name]
    out = json.loads(codex.contextfork("export", "--with-conversation", "--transcript", str(rollout), "--json").stdout)
    pid = out["data"]["package_id"]
    remote = codex.tmp / "remote.git"
    git(codex.tmp, "clone", "-q", "--bare", str(a.path), str(remote))
    a.git("remote", "add", "origin", str(remote))
    codex.contextfork("push", "origin")
    b = Repo(codex.tmp / "machine-b" / "project")
    git(codex.tmp, "clone", "-q", str(remote), str(b.path))
    home_b = codex.tmp / "machine-b" / "codex-home"
    home_b.mkdir()
    (home_b / "config.toml").write_text(codex.mock.codex_config())
    env_b = {**codex.env, "CODEX_HOME": str(home_b), "HOME": str(codex.tmp / "machine-b")}
    assert cli("pull", cwd=b.path, environ=env_b).returncode == 0
    res = cli("resume", pid, "--codex", "--json", cwd=b.path, environ=env_b)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["resume_command"] == f"codex resume {sid}"
    before = len(codex.mock.response_requests())
    codex.mock.script(OAReply(text="It was quibble-77."))
    run = run_bounded([str(codex.bin), "exec", "resume", sid, "Which marker did we find?"],
                      cwd=b.path, env=env_b, timeout=120)  # fmt: skip
    assert run.returncode == 0, run
    [asked] = codex.mock.response_requests()[before:]
    body = input_text(asked)
    assert "marker=quibble-77" in body  # the command output from machine A's rollout
    assert f"cat {b.path}/notes.txt" in body and f"{a.path}/notes.txt" not in body


def test_a_pi_session_exported_on_machine_a_resumes_in_pi_on_machine_b(
    tmp_path: Path, client_prefix: Path, anthropic: MockAnthropic
) -> None:
    import shutil

    from tests.e2e.pi_rig import MODEL, PiRig

    pi = PiRig.create(tmp_path, client_prefix, anthropic)
    a = pi.repo
    a.write("notes.txt", "marker=wibble-13\n")
    a.commit_all("notes")
    pi.mock.script(
        Reply(text="Reading.", tool_uses=[ToolUse("bash", {"command": f"cat {a.path}/notes.txt"})],
              usage=Usage(input_tokens=3000)),
        Reply(text="The marker is wibble-13.", usage=Usage(input_tokens=3300)),
    )  # fmt: skip
    first = pi.run("What is the marker?")
    assert first.returncode == 0, first
    [session] = pi.sessions()
    sid = json.loads(session.read_text().splitlines()[0])["id"]
    out = cli("export", "--with-conversation", "--transcript", str(session), "--json", cwd=a.path,
              environ=pi.env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(a.path), str(remote))
    a.git("remote", "add", "origin", str(remote))
    assert cli("push", "origin", cwd=a.path, environ=pi.env).returncode == 0
    b = Repo(tmp_path / "machine-b" / "project")
    git(tmp_path, "clone", "-q", str(remote), str(b.path))
    home_b = tmp_path / "machine-b" / "home"
    (home_b / ".pi").mkdir(parents=True)
    shutil.copytree(pi.home / ".pi" / "agent", home_b / ".pi" / "agent",
                    ignore=shutil.ignore_patterns("sessions"))  # models.json, settings.json
    env_b = {**pi.env, "HOME": str(home_b)}
    assert cli("pull", cwd=b.path, environ=env_b).returncode == 0
    res = cli("resume", pid, "--pi", "--json", cwd=b.path, environ=env_b)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.json()["data"]["resume_command"] == f"pi --session {sid}"
    before = len(pi.mock.main_requests())
    pi.mock.script(Reply(text="It was wibble-13.", usage=Usage(input_tokens=3600)))
    run = run_bounded([str(pi.bin), "-p", "Which marker did we find?", "--provider", "mock",
                       "--model", MODEL, "--session", sid], cwd=b.path, env=env_b, timeout=150)  # fmt: skip
    assert run.returncode == 0, run
    [asked] = pi.mock.main_requests()[before:]
    body = json.dumps(asked)
    assert "marker=wibble-13" in body
    assert f"cat {b.path}/notes.txt" in body and f"{a.path}/notes.txt" not in body
