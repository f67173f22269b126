"""A package carries the Claude Code conversation; ``resume --claude`` on another machine (other
repo root, other Claude Code config) writes it under that machine's slug with paths rewritten."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.package.claims_models import Conversation
from contextfork.transcript import load_session
from contextfork.transcript.locate import project_slug
from tests.helpers import Repo, cli, clones_of_one_remote
from tests.transcript.builders import CC, text, tool_use, write_jsonl

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SID = "44444444-2222-4333-8444-555555555555"


def _session(a: Repo, config: Path) -> Path:
    b = CC(session_id=SID, cwd=str(a.path))
    recs = [b.user(f"fix {a.path}/src/app.py; my token is {TOKEN}"),
            b.assistant("m1", [tool_use("t1", "Read", file_path=f"{a.path}/src/app.py")]),
            b.result("t1", "x = 1"),
            b.assistant("m2", [text(f"{a.path}/src/app.py sets x = 1")])]  # fmt: skip
    return write_jsonl(config / "projects" / project_slug(a.path) / f"{SID}.jsonl", recs)


def test_resume_claude_writes_the_conversation_for_this_machine_with_paths_rewritten(
    tmp_path: Path,
) -> None:
    _remote, a, b = clones_of_one_remote(tmp_path)
    conf_a, conf_b = tmp_path / "conf-a", tmp_path / "conf-b"
    t = _session(a, conf_a)
    env_a = {"CLAUDE_CONFIG_DIR": str(conf_a)}
    out = cli("export", "--with-conversation", "--transcript", str(t), "--json", cwd=a.path,
              env=env_a)  # fmt: skip
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    carried = (a.path / ".contextfork" / "packages" / pid / "conversation.jsonl").read_text()
    Conversation.model_validate_json(
        (a.path / ".contextfork" / "packages" / pid / "conversation.json").read_text())
    assert TOKEN not in carried and "[REDACTED" in carried
    assert cli("push", "origin", cwd=a.path).returncode == 0
    assert cli("pull", cwd=b.path).returncode == 0
    res = cli("resume", pid, "--claude", "--json", cwd=b.path, env={"CLAUDE_CONFIG_DIR": str(conf_b)})
    assert res.returncode == 0, res.stdout + res.stderr
    data = res.json()["data"]
    target = conf_b / "projects" / project_slug(b.path) / f"{SID}.jsonl"
    assert data["path"] == str(target) and data["session_id"] == SID
    assert data["resume_command"] == f"claude --resume {SID}"
    body = target.read_text()
    assert str(a.path) not in body and f"{b.path}/src/app.py" in body
    session = load_session(target)
    assert session.session_id == SID and session.cwd == str(b.path) and len(session.steps) == 2
    # Again: same content, same id; another session already holding the id gets a copy.
    again = cli("resume", pid, "--claude", "--json", cwd=b.path, env={"CLAUDE_CONFIG_DIR": str(conf_b)})
    assert again.json()["data"]["session_id"] == SID
    target.write_text(json.dumps({"type": "user", "sessionId": SID}) + "\n")
    third = cli("resume", pid, "--claude", "--json", cwd=b.path, env={"CLAUDE_CONFIG_DIR": str(conf_b)})
    assert third.json()["data"]["session_id"] != SID
    # A tampered conversation is refused (the manifest seals it).
    carried_b = b.path / ".contextfork" / "packages" / pid / "conversation.jsonl"
    carried_b.write_text(carried_b.read_text().replace("x = 1", "x = 2"))
    bad = cli("resume", pid, "--claude", cwd=b.path, env={"CLAUDE_CONFIG_DIR": str(conf_b)})
    assert bad.returncode == 3 and "does not validate" in bad.stderr


def test_resume_claude_refuses_a_package_without_a_conversation(
    repo: Repo,
) -> None:
    pid = cli("export", "--json", cwd=repo.path).json()["data"]["package_id"]
    res = cli("resume", pid, "--claude", cwd=repo.path)
    assert res.returncode == 4 and "carries no conversation" in res.stderr


def test_resume_pi_writes_a_carried_pi_session_where_pi_looks_for_this_cwd(
    tmp_path: Path,
) -> None:
    _remote, a, b = clones_of_one_remote(tmp_path)

    def msg(i: str, parent: str | None, m: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": parent,
                "timestamp": f"2026-12-01T10:00:0{i[-1]}Z", "message": m}  # fmt: skip

    src = write_jsonl(tmp_path / "pi-a" / "2026-12-01T10-00-00-000Z_pi7.jsonl", [
        {"type": "session", "version": 3, "id": "pi7", "timestamp": "2026-12-01T10:00:00Z",
         "cwd": str(a.path)},
        msg("e1", None, {"role": "user", "content": [{"type": "text", "text": f"read {a.path}/README.md"}]}),
    ])  # fmt: skip
    out = cli("export", "--with-conversation", "--transcript", str(src), "--json", cwd=a.path)
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    assert cli("push", "origin", cwd=a.path).returncode == 0
    assert cli("pull", cwd=b.path).returncode == 0
    agent = tmp_path / "pi-agent-b"
    res = cli("resume", pid, "--pi", "--json", cwd=b.path, env={"PI_CODING_AGENT_DIR": str(agent)})
    assert res.returncode == 0, res.stdout + res.stderr
    safe = "--" + str(b.path.resolve()).lstrip("/").replace("/", "-") + "--"
    target = agent / "sessions" / safe / src.name
    assert res.json()["data"]["path"] == str(target)
    assert res.json()["data"]["resume_command"] == "pi --session pi7"
    session = load_session(target)
    assert session.cwd == str(b.path.resolve()) and str(a.path) not in target.read_text()


def test_a_forked_conversation_travels_with_the_cold_store_its_stubs_point_to(
    tmp_path: Path,
) -> None:
    import re

    from tests.harness import cc_fixture

    _remote, a, b = clones_of_one_remote(tmp_path)
    conf_a, conf_b = tmp_path / "conf-a", tmp_path / "conf-b"
    env_a, env_b = {"CLAUDE_CONFIG_DIR": str(conf_a)}, {"CLAUDE_CONFIG_DIR": str(conf_b)}
    src = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", a.path)
    fork = cli("fork", "--transcript", str(src), "--min-chars", "500", "--json", cwd=a.path, env=env_a)
    assert fork.returncode == 0, fork.stderr
    forked = Path(fork.json()["data"]["fork"])
    out = cli("export", "--with-conversation", "--transcript", str(forked), "--json", cwd=a.path,
              env=env_a)  # fmt: skip
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    meta = json.loads((a.path / ".contextfork" / "packages" / pid / "session_metadata.json").read_text())
    assert f".contextfork/cold/{cc_fixture.SESSION}" in meta["cold_store_refs"]
    assert cli("push", "origin", cwd=a.path).returncode == 0  # the store goes by default
    assert cli("pull", cwd=b.path).returncode == 0
    res = cli("resume", pid, "--claude", "--json", cwd=b.path, env=env_b)
    assert res.returncode == 0, res.stdout + res.stderr
    body = Path(res.json()["data"]["path"]).read_text()
    m = re.search(r"`contextfork fold show (\d+) --session ([0-9a-f-]+)`", body)
    assert m, "the carried fork keeps its stubs"
    shown = cli("fold", "show", m.group(1), "--session", m.group(2), cwd=b.path)
    assert shown.returncode == 0 and cc_fixture.BIG_MARKER in shown.stdout  # the stub's promise


def test_resume_claude_refuses_a_conversation_a_repository_committed(tmp_path: Path) -> None:
    """A clone that commits ``.contextfork/packages/<id>/`` with a conversation must not get it
    written as a session the user's client resumes (issue 22: only provenanced packages)."""
    _remote, a, b = clones_of_one_remote(tmp_path)
    conf_a, conf_b = tmp_path / "conf-a", tmp_path / "conf-b"
    t = _session(a, conf_a)
    out = cli("export", "--with-conversation", "--transcript", str(t), "--json", cwd=a.path,
              env={"CLAUDE_CONFIG_DIR": str(conf_a)})  # fmt: skip
    pid = out.json()["data"]["package_id"]
    a.git("add", "-f", f".contextfork/packages/{pid}")
    a.git("commit", "-q", "-m", "ship a package")
    a.git("push", "-q", "origin", "HEAD")
    b.git("pull", "-q", "origin", a.git("rev-parse", "--abbrev-ref", "HEAD"))
    assert (b.path / ".contextfork" / "packages" / pid / "conversation.jsonl").is_file()
    res = cli("resume", pid, "--claude", cwd=b.path, env={"CLAUDE_CONFIG_DIR": str(conf_b)})
    assert res.returncode == 3, res.stdout + res.stderr
    assert "no provenance record" in res.stderr and "--trust" in res.stderr
    assert not (conf_b / "projects").exists()
