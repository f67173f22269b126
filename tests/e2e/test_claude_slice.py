"""Real Claude Code 2.1.328: SubagentStart gives each subagent its role slice, SubagentStop folds it.

The mock scripts the parent's work (a failing command) and then one Agent call, or two parallel
ones of different types; each subagent's first request must carry the slice for its own
agent_type, and after the run the subagent's transcript must be in the cold store under its own
key, byte for byte (docs/slice.md records what the client sends).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.e2e.clients import REPO_ROOT
from tests.e2e.mock_anthropic import Reply, ToolUse, request_text
from tests.e2e.rigs import ClaudeRig

FAILING = "cat zorblax-missing.txt"


def _parent(body: dict[str, Any]) -> bool:
    return "cc_is_subagent=true" not in json.dumps(body.get("system"))


def _run(claude: ClaudeRig, *agent_calls: dict[str, Any]) -> dict[str, Any]:
    # the hooks run this checkout's contextfork (a worktree beside an editable install of another)
    claude.env["PYTHONPATH"] = str(REPO_ROOT)
    claude.contextfork("hooks", "install", "--claude", "--project")
    claude.mock.script(
        Reply(text="Checking.", tool_uses=[ToolUse("Bash", {"command": FAILING, "description": "read"})],
              when=_parent),
        Reply(text="Delegating.", tool_uses=[ToolUse("Agent", c) for c in agent_calls], when=_parent),
    )  # fmt: skip
    return claude.prompt("Fix the zorblax reader", allowed=("Bash", "Agent"), timeout=150)


def _first_requests(claude: ClaudeRig) -> dict[str, dict[str, Any]]:
    """agent id → the subagent's first request body."""
    out: dict[str, dict[str, Any]] = {}
    for req, _kind, _reply in claude.mock.answered:
        aid = req.headers.get("x-claude-code-agent-id")
        if aid and aid not in out and isinstance(req.body, dict):
            out[aid] = req.body
    return out


def _starts(claude: ClaudeRig) -> dict[str, dict[str, Any]]:
    """agent id → what SubagentStart recorded (one file per agent: parallel hooks append to
    hooks.log by read-modify-write and can lose a line, so the log is not used here)."""
    root = claude.repo.path / ".contextfork" / "harness" / "subagents"
    out: dict[str, dict[str, Any]] = {}
    for path in root.glob("*/*.json"):
        rec = json.loads(path.read_text())
        out[rec["agent_id"]] = {**rec, "task": rec["slice"]["task"]}
    return out


def test_a_subagents_first_request_carries_the_slice_for_its_agent_type(claude: ClaudeRig) -> None:
    _run(claude, {"description": "fix", "prompt": "SUBTASK-one: fix the zorblax reader",
                  "subagent_type": "general-purpose"})  # fmt: skip
    firsts, starts = _first_requests(claude), _starts(claude)
    assert len(firsts) == 1 and set(firsts) == set(starts), (firsts.keys(), starts)
    (aid, body), = firsts.items()
    text = request_text(body)
    assert "SubagentStart hook additional context: contextfork slice of the parent session" in text
    assert "for the default role (agent type general-purpose)" in text
    assert "Task: SUBTASK-one: fix the zorblax reader" in text
    assert f"$ {FAILING} (failed)" in text  # the parent's failed call: do not retry
    assert re.search(r"\[bytes \d+-\d+ sha256 [0-9a-f]{12}\]", text)
    parent_text = "".join(request_text(b) for b in claude.mock.main_requests() if _parent(b))
    assert "contextfork slice of the parent" not in parent_text  # the parent is not given it
    assert starts[aid]["role"] == "default" and starts[aid]["task"]["matched"] in ("exact", "matched")


def test_a_parallel_pair_of_subagents_each_gets_its_own_slice(claude: ClaudeRig) -> None:
    _run(claude,
         {"description": "look", "prompt": "SUBTASK-explore: where is zorblax read", "subagent_type": "Explore"},
         {"description": "plan", "prompt": "SUBTASK-plan: plan the zorblax fix", "subagent_type": "Plan"})  # fmt: skip
    firsts, starts = _first_requests(claude), _starts(claude)
    assert len(firsts) == 2 and set(firsts) == set(starts), (firsts.keys(), starts)
    by_type = {starts[aid]["agent_type"]: request_text(body) for aid, body in firsts.items()}
    explore, plan = by_type["Explore"], by_type["Plan"]
    assert "for the explorer role (agent type Explore)" in explore
    assert "Task: SUBTASK-explore" in explore and "Task: SUBTASK-plan" not in explore
    assert "for the planner role (agent type Plan)" in plan
    assert "Task: SUBTASK-plan" in plan and "Task: SUBTASK-explore" not in plan


def test_subagent_stop_folds_the_subagent_transcript_and_fold_show_returns_its_exact_bytes(
    claude: ClaudeRig,
) -> None:
    result = _run(claude, {"description": "fix", "prompt": "SUBTASK-one: fix the zorblax reader",
                           "subagent_type": "general-purpose"})  # fmt: skip
    # Claude Code may also stop an internal agent that writes no transcript (its compaction
    # agent; under load another one early in the session): that stop folds nothing.
    stops = [e for e in claude.hooks_log() if e.get("event") == "subagent-stop"]
    folds = [e for e in stops if e.get("action") == "fold"]
    assert len(folds) == 1 and all(e.get("action") == "none" for e in stops if e not in folds), stops
    aid, key = folds[0]["agent_id"], folds[0]["store_session"]
    assert key == f"{result['session_id']}.agent-{aid}"
    record_path = (claude.repo.path / ".contextfork" / "harness" / "subagents" / result["session_id"]
                   / f"{aid}.json")  # fmt: skip
    record = json.loads(record_path.read_text())
    assert record["parent_session"] == result["session_id"] and record["role"] == "default"
    agent_file = claude.sessions_dir / result["session_id"] / "subagents" / f"agent-{aid}.jsonl"
    raw = agent_file.read_bytes()
    unit = claude.contextfork_json("fold", "show", str(record["unit"]["step"]), "--session",
                                   record["unit"]["session"])["data"]["node"]  # fmt: skip
    assert hashlib.sha256(unit["content"].encode("utf-8")).hexdigest() == record["transcript_sha256"]
    assert raw.startswith(unit["content"].encode("utf-8")) and b"SUBTASK-one" in raw
    # the inspector nests the subagent under the Agent call that spawned it, with its slice
    out = claude.tmp / "site"
    claude.contextfork("view", "--transcript", str(claude.transcript(result["session_id"])), "--out", str(out))
    page = (out / "index.html").read_text()
    agent_block = page[page.index(f'id="agent-{aid}"'):]
    assert record["slice"]["sha256"] in agent_block[:3000]
    assert f"contextfork fold show 1 --session {record['unit']['session']}" in agent_block[:3000]
    step_of_call = page[: page.index(f'id="agent-{aid}"')].rsplit('<li class="step', 1)[1]
    assert "<code>Agent</code>" in step_of_call
    # step by step too: each folded step is exact lines of the file, in order (Claude Code's
    # api-request-* copies of the request bodies belong to no step; the unit keeps them)
    assert record["steps"] >= 1
    at = 0
    for step in range(1, record["steps"] + 1):
        node = claude.contextfork_json("fold", "show", str(step), "--session", key)["data"]["node"]
        for line in node["content"].encode("utf-8").splitlines(keepends=True):
            found = raw.find(line, at)
            assert found >= 0 and raw[found - 1 : found] in (b"", b"\n"), line[:200]
            at = found + len(line)


def test_fork_role_writes_a_session_claude_resumes_with_only_the_slice(claude: ClaudeRig) -> None:
    claude.env["PYTHONPATH"] = str(REPO_ROOT)
    claude.mock.script(
        Reply(text="Checking.", tool_uses=[ToolUse("Bash", {"command": FAILING, "description": "read"})]),
        Reply(text="It is missing."),
    )  # fmt: skip
    first = claude.prompt("Fix the zorblax reader")
    transcript = claude.transcript(first["session_id"])
    before = transcript.read_bytes()
    fork = claude.contextfork_json("fork", "--role", "coder", "--transcript", str(transcript))["data"]
    assert transcript.read_bytes() == before
    claude.mock.script(Reply(text="On it."))
    claude.prompt("Carry on", resume=fork["session_id"])
    text = request_text(claude.mock.main_requests()[-1])
    assert f"This session continues session {first['session_id']}" in text
    assert "for the coder role" in text and f"$ {FAILING}" in text
    assert re.search(r"\[step \d+ payload [0-9a-f]{12} · bytes", text)  # the parent was folded
    assert "Fix the zorblax reader" not in text.split("contextfork slice of the parent")[0]
