"""Real Codex: ``contextfork fork`` of its rollout writes a folded rollout that
``codex exec resume`` accepts; the next request carries the stub, not the large output."""

from __future__ import annotations

import re

from contextfork.forkstub import STUB_PREFIX
from tests.e2e.mock_openai import Call, OAReply, input_text
from tests.e2e.rigs import CodexRig
from tests.helpers import cli


def test_a_forked_codex_rollout_resumes_in_the_real_codex(codex: CodexRig) -> None:
    codex.mock.script(
        OAReply(text="Listing.", calls=[Call("exec_command", {"cmd": "seq 1 4000"})]),
        OAReply(text="4000 lines."),
    )
    first = codex.run("exec", "Count to 4000")
    assert first.returncode == 0, first
    match = re.search(r"session id: ([0-9a-f-]{36})", first.stderr)
    assert match, first.stderr[-2000:]
    sid = match.group(1)
    [rollout] = [p for p in (codex.codex_home / "sessions").rglob("*.jsonl") if sid in p.name]
    assert "3999\\n4000" in rollout.read_text()
    res = cli("fork", "--transcript", str(rollout), "--json", cwd=codex.repo.path, environ=codex.env)
    assert res.returncode == 0, res.stdout + res.stderr
    data = res.json()["data"]
    assert data["stubbed"] == 1, data
    before = len(codex.mock.response_requests())
    codex.mock.script(OAReply(text="Still 4000."))
    run = codex.run("exec", "resume", data["session_id"], "How many lines?")
    assert run.returncode == 0, run
    [asked] = codex.mock.response_requests()[before:]
    body = input_text(asked)
    assert STUB_PREFIX in body and "3999\n4000" not in body
    assert "How many lines?" in body and "Count to 4000" in body
