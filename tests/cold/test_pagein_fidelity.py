"""Page-in that brings back what the agent needs (issue 11), through the real hook path.

A Claude Code-shaped session is folded by `hook pre-compact`; `hook user-prompt-submit` gets
the question; assertions are on what was injected (and what the store recorded).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from contextfork.cold import api
from tests.helpers import Repo, run_cli

SID = "fidelity-0000-4000-8000-000000000001"


class _Session:
    """Writes Claude Code JSONL lines: user prompt, assistant tool call, tool result."""

    def __init__(self, cwd: Path) -> None:
        self.cwd, self.n, self.parent, self.lines = cwd, 0, None, []  # type: ignore[var-annotated]

    def _env(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"00000000-0000-4000-8000-{self.n:012d}"
        obj = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
               "cwd": str(self.cwd), "sessionId": SID, "version": "2.1.328", "gitBranch": "main",
               "type": kind, **extra, "uuid": uid,
               "timestamp": f"2026-11-30T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"}  # fmt: skip
        self.parent = uid
        self.lines.append(obj)
        return obj

    def turn(self, prompt: str, tool: str, tool_input: dict[str, Any], result: str) -> None:
        self._env("user", message={"role": "user", "content": prompt})
        msg = {"model": "claude-opus-4-6", "id": f"msg_{self.n}", "type": "message",
               "role": "assistant", "stop_reason": "tool_use",
               "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                         "cache_read_input_tokens": 5000, "output_tokens": 20},
               "content": [{"type": "tool_use", "id": f"toolu_{self.n}", "name": tool,
                            "input": tool_input}]}  # fmt: skip
        call = self._env("assistant", message=msg, requestId=f"req_{self.n}")
        self._env("user", sourceToolAssistantUUID=call["uuid"], toolUseResult={"stdout": result},
                  message={"role": "user", "content": [{"type": "tool_result", "content": result,
                           "tool_use_id": f"toolu_{self.n - 1}", "is_error": False}]})  # fmt: skip

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in self.lines))
        return path


def _big_log(term_line: str, lines: int = 1500) -> str:
    rows = [f"2026-11-30 10:00:{i % 60:02d} INFO worker-{i % 7} processed batch {i} ok"
            for i in range(lines)]  # fmt: skip
    rows[lines // 2] = term_line
    return "\n".join(rows)


def _fold(repo: Repo, transcript: Path) -> None:
    res = run_cli("hook", "pre-compact", cwd=repo.path, input=json.dumps(
        {"session_id": SID, "transcript_path": str(transcript), "cwd": str(repo.path),
         "trigger": "auto", "hook_event_name": "PreCompact"}))  # fmt: skip
    assert res.returncode == 0, res.stderr


def _ask(repo: Repo, prompt: str) -> str:
    res = run_cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(
        {"session_id": SID, "transcript_path": str(repo.path / "t.jsonl"), "cwd": str(repo.path),
         "prompt": prompt, "hook_event_name": "UserPromptSubmit"}))  # fmt: skip
    assert res.returncode == 0, res.stderr
    if not res.stdout.strip():
        return ""
    return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"])


def _store(repo: Repo) -> Path:
    return repo.path / ".contextfork" / "cold" / SID


def test_page_in_injects_the_readable_form_not_transport_metadata(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("check the gateway", "Bash", {"command": "curl -s localhost:8080/health"},
           "gateway status: degraded, upstream quasar_billing_shard timed out")  # fmt: skip
    s.turn("something else", "Bash", {"command": "ls"}, "README.md\nsrc")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "What was wrong with quasar_billing_shard?")
    assert "upstream quasar_billing_shard timed out" in ctx
    assert "[tool call: Bash]" in ctx and "curl -s localhost:8080/health" in ctx
    for metadata in ("parentUuid", "sessionId", "requestId", "cache_read_input_tokens", '"cwd"'):
        assert metadata not in ctx


def test_a_node_over_the_budget_comes_back_as_a_verified_window_holding_the_term(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("run the import", "Bash", {"command": "./import.sh"},
           _big_log("2026-11-30 10:00:00 ERROR ZebraLedgerMismatch in batch 750: checksum 9f3a"))
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "What did we find earlier about ZebraLedgerMismatch?")
    assert "ZebraLedgerMismatch in batch 750: checksum 9f3a" in ctx
    assert 'mode="window"' in ctx and len(ctx) <= 9_500
    m = re.search(r"\[window: bytes (\d+)\+(\d+) of the readable form, sha256 ([0-9a-f]{64})", ctx)
    assert m is not None
    node = json.loads((_store(repo) / "cold_nodes" / "step_000001.json").read_bytes())
    chunk = node["readable"].encode()[int(m.group(1)) : int(m.group(1)) + int(m.group(2))]
    assert hashlib.sha256(chunk).hexdigest() == m.group(3)  # the slice checks against the node


def test_an_older_read_is_not_hidden_by_a_newer_step_on_the_same_file_that_lacks_the_term(
    repo: Repo,
) -> None:
    s = _Session(repo.path)
    s.turn("read it", "Read", {"file_path": "src/ledger.py"}, "def reconcile():\n    PELICAN_THRESHOLD = 42\n")
    s.turn("edit it", "Edit", {"file_path": "src/ledger.py", "old_string": "a", "new_string": "b"},
           "The file src/ledger.py has been updated.")  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "What is PELICAN_THRESHOLD set to?")
    assert "PELICAN_THRESHOLD = 42" in ctx


def test_filler_words_select_nothing(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("we need to find the earlier results", "Bash", {"command": "echo found earlier"},
           "found it earlier: results look fine")  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    assert _ask(repo, "What did we find earlier?") == ""


def test_a_relative_path_in_the_prompt_finds_the_absolute_one_in_tool_output(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Read", {"file_path": "/home/u/app/lib/web/router_plug.ex"},
           "defmodule RouterPlug do\n  @moduledoc \"dispatches the orchid pipeline\"\nend")  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    assert "dispatches the orchid pipeline" in _ask(repo, "What is in lib/web/router_plug.ex?")


def test_only_what_is_injected_is_recorded_as_hydrated(repo: Repo) -> None:
    names = ["kiwi_alpha", "kiwi_bravo", "kiwi_charlie", "kiwi_delta", "kiwi_echo", "kiwi_foxtrot"]
    s = _Session(repo.path)
    for i, name in enumerate(names):  # six steps, one name each, more than the hook can show
        s.turn(f"check {i}", "Bash", {"command": f"cat part{i}.txt"},
               "\n".join(f"{name} row {k} " + "=" * 180 for k in range(16)))  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "Where did " + ", ".join(names) + " appear?")
    shown = {int(m) for m in re.findall(r'<cold-step step="(\d+)"', ctx)}
    state = json.loads((_store(repo) / "turn_state.json").read_bytes())
    recorded = {int(h["step_id"]) for h in state["hydrated"]}
    assert shown and recorded == shown


def test_rehydrating_a_step_in_the_same_turn_is_free(repo: Repo) -> None:
    s = _Session(repo.path)
    s.turn("read", "Bash", {"command": "cat notes.txt"}, "the kestrel key is 7")
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    first = api.page_in_step(1, store_dir=_store(repo)).data
    again = api.page_in_step(1, store_dir=_store(repo)).data
    assert again["turn_tokens_used"] == first["turn_tokens_used"] > 0


def test_an_escaped_password_in_tool_output_is_scrubbed_from_what_is_stored_and_injected(
    repo: Repo,
) -> None:
    s = _Session(repo.path)
    s.turn("show config", "Bash", {"command": "cat cfg.json"},
           '{"service": "heron_gateway", "password": "Tr0ub4dor&3-heron"}')  # fmt: skip
    s.turn("next", "Bash", {"command": "ls"}, "ok")
    _fold(repo, s.write(repo.path / "t.jsonl"))
    ctx = _ask(repo, "What is the heron_gateway config?")
    assert "heron_gateway" in ctx and "Tr0ub4dor&3-heron" not in ctx
    for path in (_store(repo) / "cold_nodes").iterdir():
        assert "Tr0ub4dor&3-heron" not in path.read_text(encoding="utf-8")


def test_recall_ranks_with_fts5_bm25_beyond_exact_terms_and_ignores_filler(repo: Repo) -> None:
    store = repo.path / ".contextfork" / "cold" / "recall"
    api.fold_step(1, "db work", b"the database migration failed halfway", store_dir=store)
    api.fold_step(2, "unrelated", b"formatting only", store_dir=store)
    api.fold_step(3, "db work again", b"migration migration retried; migration done", store_dir=store)
    data = api.recall("What did we find earlier about migrating?", store_dir=store).data
    assert "find" in data["filler_terms"] and "earlier" in data["filler_terms"]
    hits = data["hits"]
    # "migrating" is no indexed term and no prefix partner: only FTS5 (porter) finds them
    assert [h["step_id"] for h in hits] == [3, 1]  # better bm25 first
    assert all(h["tier"] == "ranked" and h["bm25"] is not None for h in hits)
