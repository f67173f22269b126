"""An MCP call names no transcript: the claims are checked in the session that holds them
(here a Codex rollout of this repository), and that session seeds the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.package.claims import verify
from tests.helpers import Repo
from tests.transcript.builders import write_jsonl


def _cx(ts: int, kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": f"2026-12-01T12:00:{ts:02d}.000Z", "type": kind, "payload": payload}


def test_claims_without_a_transcript_are_checked_in_this_repos_codex_rollout(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    rollout = write_jsonl(home / "sessions" / "2026" / "12" / "01" / "rollout-2026-12-01T12-00-00-cx1.jsonl", [
        _cx(0, "session_meta", {"id": "cx1", "cwd": str(repo.path)}),
        _cx(1, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "run the tests"}]}),
        _cx(2, "response_item", {"type": "function_call", "name": "shell", "call_id": "call_7",
                                 "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]})}),
        _cx(3, "response_item", {"type": "function_call_output", "call_id": "call_7",
                                 "output": "Exit code: 1\nOutput:\nFAILED test_retry"}),
    ])  # fmt: skip
    given = {"settled_decisions": [{"decision": "the retry test is flaky", "evidence": [
        {"kind": "step", "ref": "call_7", "note": "`FAILED test_retry`"},
        {"kind": "command", "ref": "pytest -q", "note": "exit 1"}]}]}  # fmt: skip
    claims, refused, used = verify(given, repo.path, None)
    assert refused is None and used == rollout
    assert [c["status"] for c in claims] == ["verified", "verified"]
    given["settled_decisions"][0]["evidence"][0]["ref"] = "call_999"
    claims, refused, used = verify(given, repo.path, None)
    assert refused is not None and used is None


def test_cli_handoff_without_a_transcript_is_checked_in_this_repos_pi_session_which_seeds_it(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import cli

    agent = tmp_path / "pi-agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))

    def msg(i: str, parent: str | None, m: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": parent,
                "timestamp": f"2026-12-01T10:00:0{i[-1]}Z", "message": m}  # fmt: skip

    write_jsonl(agent / "sessions" / "--repo--" / "2026-12-01_pi1.jsonl", [
        {"type": "session", "version": 3, "id": "pi1", "timestamp": "2026-12-01T10:00:00Z",
         "cwd": str(repo.path)},
        msg("e1", None, {"role": "user", "content": [{"type": "text", "text": "build it"}]}),
        msg("e2", "e1", {"role": "assistant", "content": [
            {"type": "toolCall", "id": "tc9", "name": "bash", "arguments": {"command": "make"}}]}),
        msg("e3", "e2", {"role": "toolResult", "toolCallId": "tc9", "toolName": "bash",
                         "content": [{"type": "text", "text": "make: *** No rule to make target"}],
                         "isError": True}),
    ])  # fmt: skip
    given = {"settled_decisions": [{"decision": "there is no Makefile yet", "evidence": [
        {"kind": "step", "ref": "tc9", "note": "`No rule to make target`"}]}]}  # fmt: skip
    (repo.path / ".git" / "h.json").write_text(json.dumps(given))
    res = cli("export", "--handoff", str(repo.path / ".git" / "h.json"), "--json", cwd=repo.path,
              env={"PI_CODING_AGENT_DIR": str(agent)})  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    pkg = Path(res.json()["data"]["path"])
    record = json.loads((pkg / "handoff_claims.json").read_text())
    assert record["claims"][0]["status"] == "verified"
    meta = json.loads((pkg / "session_metadata.json").read_text())
    assert meta["transcript"]["path"].endswith("2026-12-01_pi1.jsonl")  # it seeded the package
