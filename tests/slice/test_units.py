"""A subagent as one folded, restorable unit: SubagentStop folds its result and its whole
transcript; ``fork`` and ``render`` put a stub naming those folds where the parent got the
result back, and ``fold show`` returns exactly those bytes; ``view`` names the same folds under
the call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork import layout
from contextfork.forkstub import STUB_PREFIX
from tests.helpers import Repo, cli, run_cli
from tests.slice.parent import SESSION, Writer, parent_session

AGENT = "a1b2c3d4e5f6a7b8c"
RESULT = "ZORBLAX report: the reader fails on empty files.\n" + "".join(
    f"- finding {i}: src/reader.py line {i} reads past the end\n" for i in range(80))


def _session_with_a_subagent(repo: Repo, tmp_path: Path) -> tuple[Path, Path, str]:
    """The parent, written as Claude Code writes a finished Agent call (its result: the
    subagent's last message, then the agentId line), and the subagent's own transcript."""
    w: Writer = parent_session(repo.path)
    call_id = "toolu_agent_0001"
    w.env("assistant", message={"model": "claude-opus-5-5", "id": "msg_agent", "type": "message",
                                "role": "assistant", "stop_reason": "tool_use",
                                "usage": {"input_tokens": 3, "output_tokens": 20},
                                "content": [{"type": "tool_use", "id": call_id, "name": "Agent",
                                             "input": {"description": "audit", "prompt": "Audit the reader",
                                                       "subagent_type": "general-purpose"}}]})  # fmt: skip
    trailer = f"agentId: {AGENT} (for resuming to continue this agent's work if needed)\n<usage>total_tokens: 900</usage>"
    w.env("user", message={"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                                        "content": [{"type": "text", "text": RESULT},
                                                                    {"type": "text", "text": trailer}]}]})  # fmt: skip
    w.prompt("Thanks, now fix it")
    parent = w.write(tmp_path / "proj" / f"{SESSION}.jsonl")
    sub = Writer(repo.path)
    sub.prompt("Audit the reader")
    sub.call("Read", {"file_path": f"{repo.path}/src/reader.py"}, "1\tdef read(): ...")
    for o in sub.out:
        o["isSidechain"], o["agentId"] = True, AGENT
    agent_file = sub.write(parent.with_suffix("") / "subagents" / f"agent-{AGENT}.jsonl")
    (agent_file.parent / f"agent-{AGENT}.meta.json").write_text(json.dumps({"toolUseId": call_id}))
    stop = {"session_id": SESSION, "transcript_path": str(parent), "cwd": str(repo.path),
            "agent_id": AGENT, "agent_type": "general-purpose", "hook_event_name": "SubagentStop",
            "agent_transcript_path": str(agent_file), "last_assistant_message": RESULT}  # fmt: skip
    res = run_cli("hooks", "run", "subagent-stop", cwd=repo.path, input=json.dumps(stop))
    assert res.returncode == 0, res.stderr
    return parent, agent_file, call_id


def _show(repo: Repo, step: int, session: str) -> str:
    res = cli("fold", "show", str(step), "--session", session, "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    return str(res.json()["data"]["node"]["content"])


def _stub_of(fork: Path, call_id: str) -> str:
    for line in fork.read_text().splitlines():
        for b in (json.loads(line).get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("tool_use_id") == call_id:
                return str(b["content"])
    raise AssertionError("no result of the agent call in the fork")


def test_fork_shows_a_subagent_as_one_unit_whose_folds_give_back_its_exact_bytes(repo: Repo, tmp_path: Path) -> None:
    parent, agent_file, call_id = _session_with_a_subagent(repo, tmp_path)
    record = json.loads(layout.subagent_record(repo.path, SESSION, AGENT).read_text())
    assert record["result"]["chars"] == len(RESULT)
    res = cli("fork", "--transcript", str(parent), "--force", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    stub = _stub_of(Path(res.json()["data"]["fork"]), call_id)
    assert stub.startswith(STUB_PREFIX) and "ZORBLAX report" not in stub
    result_cmd = f"contextfork fold show {record['result']['step']} --session {SESSION}.agent-{AGENT}.result"
    unit_cmd = f"contextfork fold show {record['unit']['step']} --session {SESSION}.agent-{AGENT}.unit"
    assert f"subagent {AGENT} (general-purpose)" in stub and result_cmd in stub and unit_cmd in stub
    assert _show(repo, record["result"]["step"], f"{SESSION}.agent-{AGENT}.result") == RESULT
    assert _show(repo, record["unit"]["step"], f"{SESSION}.agent-{AGENT}.unit").encode() == agent_file.read_bytes()
    # render puts the same stub in the prompt (restore STEP gives the step back exactly)
    rendered = cli("render", "--transcript", str(parent), "--json", cwd=repo.path)
    assert rendered.returncode == 0, rendered.stderr
    rdata = rendered.json()["data"]
    assert [s["call_id"] for s in rdata["subagents"]] == [call_id]
    outputs = [m["content"] for m in rdata["messages"] if m["kind"] == "output"]
    assert not any("ZORBLAX report" in o for o in outputs)
    assert any(result_cmd in o and unit_cmd in o for o in outputs)
    step = rdata["subagents"][0]["step"]
    restored = cli("render", "--transcript", str(parent), "--restore", str(step), "--json", cwd=repo.path)
    assert restored.returncode == 0 and RESULT in restored.json()["data"]["answer"]
    # the view names the same folds under the Agent call
    out = tmp_path / "site"
    assert cli("view", "--transcript", str(parent), "--out", str(out), cwd=repo.path).returncode == 0
    page = (out / "index.html").read_text()
    block = page[page.index(f'id="agent-{AGENT}"'):][:4000]
    assert result_cmd in block and unit_cmd in block


def test_peek_fold_pages_the_subagents_result_back_exactly(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextfork.harness.mcp.server import build_server
    from tests.harness.test_mcp import _env, run_calls

    _session_with_a_subagent(repo, tmp_path)
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    key = f"{SESSION}.agent-{AGENT}.result"
    res = run_calls(build_server(), [
        ("peek_fold", {"workspace": str(repo.path), "session_id": key, "step": 1, "offset": at, "length": 1000})
        for at in range(0, len(RESULT), 1000)])  # fmt: skip
    pieces = [_env(r)["data"] for r in res[1:]]
    assert all(p["verified"] for p in pieces) and "".join(p["content"] for p in pieces) == RESULT


def test_a_result_fold_that_does_not_verify_is_not_named_in_the_stub(repo: Repo, tmp_path: Path) -> None:
    parent, _agent_file, call_id = _session_with_a_subagent(repo, tmp_path)
    path = layout.subagent_record(repo.path, SESSION, AGENT)
    record = json.loads(path.read_text())
    record["result"]["sha256"] = "0" * 64  # the record no longer matches the folded node
    path.write_text(json.dumps(record))
    res = cli("fork", "--transcript", str(parent), "--force", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    stub = _stub_of(Path(res.json()["data"]["fork"]), call_id)
    assert ".result`" not in stub and f"--session {SESSION}.agent-{AGENT}.unit" in stub
