"""``fork`` of a Codex rollout: a folded rollout under $CODEX_HOME, outputs stubbed only when
verified in the cold store, the original untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.forkstub import STUB_PREFIX
from contextfork.hashing import sha256_file
from contextfork.transcript import load_session
from tests.helpers import Repo, cli
from tests.transcript.builders import write_jsonl

BIG = "\n".join(f"line {i}: billing_gateway_timeout retry={i}" for i in range(300))


def _cx(ts: int, kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": f"2026-12-01T12:00:{ts:02d}.000Z", "type": kind, "payload": payload}


def _rollout(tmp_path: Path, sid: str, cwd: Path, more: list[dict[str, object]]) -> Path:
    """A rollout whose one call printed ``BIG``, then ``more``."""
    return write_jsonl(tmp_path / "src" / f"rollout-2026-12-01T12-00-00-{sid}.jsonl", [
        _cx(0, "session_meta", {"id": sid, "cwd": str(cwd)}),
        _cx(1, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "grep the logs"}]}),
        _cx(2, "response_item", {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                 "arguments": json.dumps({"cmd": "grep -rn timeout logs"})}),
        _cx(3, "response_item", {"type": "function_call_output", "call_id": "c1", "output": BIG}),
        *more,
    ])  # fmt: skip


def test_fork_of_a_codex_rollout_stubs_verified_outputs_and_keeps_the_original(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    rollout = _rollout(tmp_path, "cx9", repo.path, [
        _cx(4, "response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "300 timeouts."}]}),
    ])  # fmt: skip
    before = sha256_file(rollout)
    res = cli("fork", "--transcript", str(rollout), "--json", cwd=repo.path,
              env={"CODEX_HOME": str(home)})  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    data = res.json()["data"]
    fork = Path(data["fork"])
    assert fork.is_relative_to(home / "sessions") and data["session_id"] in fork.name
    assert data["resume_command"] == f"codex resume {data['session_id']}" and data["stubbed"] == 1
    assert sha256_file(rollout) == before
    text = fork.read_text()
    assert BIG not in text and STUB_PREFIX in text
    forked = load_session(fork)
    assert forked.session_id == data["session_id"] and len(forked.steps) == len(load_session(rollout).steps)
    import re

    m = re.search(r"— step (\d+),", text)
    assert m
    shown = cli("fold", "show", m.group(1), "--session", "cx9", cwd=repo.path)  # what it promises
    assert shown.returncode == 0 and "retry=299" in shown.stdout


def test_fork_of_a_codex_rollout_parses_it_once_and_streams_the_fork(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollout was parsed by ``fork`` (to learn its format), again by the Codex fork while
    the first parse was still held, and read whole once more to write the fork: a 55 MB rollout
    peaked at 6.6 bytes of RSS per transcript byte (2.8 now)."""
    import contextfork.transcript.codex as codex
    from contextfork.harness.fork import fork_session

    rollout = _rollout(tmp_path, "cx8", repo.path, [])
    with rollout.open("ab") as fh:
        fh.write(b'{"type":"event_msg","payload":{"type":"note","text":"\xff not utf-8"}}\n')
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    loads: list[Path] = []
    real = codex.load
    monkeypatch.setattr(codex, "load", lambda p, *a, **k: loads.append(Path(p)) or real(p, *a, **k))
    res = fork_session(repo.path, rollout)
    assert res.data["stubbed"] == 1, res.data
    fork = Path(res.data["fork"])
    assert loads == [rollout, fork]  # the original once, then the fork's read-back
    assert fork.read_bytes().endswith(b'"\xff not utf-8"}}\n')  # passed through byte for byte
