"""With no model in the loop the parts come from the harness's own compaction summary, with
provenance; otherwise the brief says "not recorded" — no placeholder reaches a new session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.package.claims_models import HandoffClaims
from contextfork.package.harvest import harvest
from contextfork.transcript import load_session
from tests.helpers import Repo, cli, run_cli
from tests.transcript.builders import CC, text, tool_use, write_jsonl

CC_SUMMARY = """This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.

Analysis:
Let me think about what happened. 1. Goal: not this one.

Summary:
1. Primary Request and Intent:
   The user asked to move the billing service from port 5434 back to 5433.

2. Key Technical Concepts:
   - Postgres

4. Errors and fixes:
   - **pytest failed on the port**: the fixture pinned 5433, so the config was changed back.

7. Pending Tasks:
   - Run the migration V12 again after the rollback

9. Optional Next Step:
   Re-run `pytest -q tests/test_billing.py` and commit the config change.
"""


def _cc_compacted(path: Path, cwd: Path) -> Path:
    b = CC(session_id="cc-1", cwd=str(cwd))
    recs: list[Any] = [b.user("fix the billing port"),
                       b.assistant("m1", [tool_use("t1", "Bash", command="pytest -q")]),
                       b.result("t1", "Exit code 1\nboom", is_error=True),
                       b.assistant("m2", [text("it fails")])]  # fmt: skip
    last = b.last
    assert last is not None
    recs += [b.boundary(last), b.summary(CC_SUMMARY), b.user("go on"),
             b.assistant("m3", [text("continuing")])]  # fmt: skip
    return write_jsonl(path, recs)


def test_claude_code_summary_sections_become_parts_with_provenance(tmp_path: Path) -> None:
    got = harvest(load_session(_cc_compacted(tmp_path / "s.jsonl", tmp_path)))
    assert got is not None
    parts, prov = got["parts"], got["provenance"]
    assert parts["active_goal"]["goal"].startswith("The user asked to move the billing service")
    assert parts["next_action"]["action"].startswith("Re-run `pytest -q tests/test_billing.py`")
    assert parts["open_risks"][0]["risk"] == (
        "Pending Tasks: Run the migration V12 again after the rollback")
    assert "the fixture pinned 5433" in parts["settled_decisions"][0]["decision"]
    assert prov["next_action"]["harness"] == "claude-code"
    assert prov["next_action"]["sections"] == ["Optional Next Step"]
    assert len(prov["active_goal"]["sha256"]) == 64


def test_pi_and_codex_summaries_are_harvested_too(tmp_path: Path) -> None:
    pi = write_jsonl(tmp_path / "pi.jsonl", [
        {"type": "session", "version": 3, "id": "pi-1", "timestamp": "2025-11-20T10:00:00Z",
         "cwd": "/p"},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": "2025-11-20T10:00:01Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "port it"}]}},
        {"type": "compaction", "id": "e2", "parentId": "e1", "timestamp": "2025-11-20T10:00:02Z",
         "summary": "## Goal\nPort the parser to Rust.\n\n## Key Decisions\n- **Use nom**: "
                    "combinators fit\n\n## Next Steps\n1. Port the lexer\n",
         "firstKeptEntryId": "e1", "tokensBefore": 9000},
    ])  # fmt: skip
    got = harvest(load_session(pi))
    assert got is not None
    assert got["parts"]["active_goal"]["goal"] == "Port the parser to Rust."
    assert got["parts"]["next_action"]["action"] == "Port the lexer"
    assert got["parts"]["settled_decisions"][0]["decision"] == "Use nom: combinators fit"
    assert got["provenance"]["active_goal"]["harness"] == "pi"

    def cx(ts: int, kind: str, payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": f"2025-12-28T12:00:{ts:02d}.000Z", "type": kind, "payload": payload}

    codex = write_jsonl(tmp_path / "cx.jsonl", [
        cx(0, "session_meta", {"id": "cx-1", "cwd": "/w"}),
        cx(1, "response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "run the tests"}]}),
        cx(2, "compacted", {"message": "We were making the flaky retry test deterministic by "
                            "seeding the clock; the fix is in tests/test_retry.py.\n\nMore."}),
    ])  # fmt: skip
    got = harvest(load_session(codex))
    assert got is not None
    assert got["parts"]["active_goal"]["goal"].startswith("We were making the flaky retry test")
    assert got["provenance"]["active_goal"]["harness"] == "codex"


def _start(repo: Repo, sid: str) -> str:
    payload = {"session_id": sid, "cwd": str(repo.path), "hook_event_name": "SessionStart",
               "source": "startup"}  # fmt: skip
    res = run_cli("hook", "session-start", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]) if res.stdout else ""


def test_export_with_no_model_harvests_the_summary_and_no_placeholder_reaches_a_session(
    repo: Repo, tmp_path: Path
) -> None:
    t = _cc_compacted(tmp_path / "t" / "cc-1.jsonl", repo.path)
    res = cli("export", "--transcript", str(t), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    pkg = Path(res.json()["data"]["path"])
    record = json.loads((pkg / "handoff_claims.json").read_text())
    HandoffClaims.model_validate(record)
    assert record["parts"]["next_action"]["source"] == "harness-summary"
    assert record["parts"]["failed_approaches"]["source"] == "machine-seeded"
    summary = (pkg / "handoff_summary.md").read_text()
    assert "from claude-code's compaction summary at step" in summary
    assert "[[unfilled" not in summary
    ctx = _start(repo, "new-session")
    assert pkg.name in ctx and "move the billing service from port 5434" in ctx
    assert "[[unfilled" not in ctx


def test_an_export_with_nothing_written_says_not_recorded_in_the_brief(repo: Repo) -> None:
    res = cli("export", "--json", cwd=repo.path)
    assert res.returncode == 0
    pkg = Path(res.json()["data"]["path"])
    assert "[[unfilled" not in (pkg / "handoff_summary.md").read_text()
    ctx = _start(repo, "new-session")
    assert pkg.name in ctx and "not recorded" in ctx and "[[unfilled" not in ctx


def test_a_real_claude_code_compaction_summary_is_harvested(transcripts_dir: Path) -> None:
    got = harvest(load_session(transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"))
    assert got is not None
    assert got["parts"]["active_goal"]["goal"].startswith('The user requested "Implement spotter-gqc"')
    assert got["parts"]["next_action"]["action"].startswith("Complete gqc.6 by adding LiveView tests")
    assert got["parts"]["open_risks"][0]["risk"].startswith("Pending Tasks: spotter-gqc.6")
    assert got["provenance"]["next_action"] == {
        "source": "harness-summary", "harness": "claude-code", "step": 103,
        "sha256": "d12119ab10dfa260ccbd461e045e90ea45c2ffd8f11183f1000c729020652baa",
        "sections": ["Optional Next Step"], "parts_trimmed_to": 700}
