"""`contextfork fork` writes a folded continuation our adapter reads back; the original is untouched."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from contextfork.hashing import sha256_file, sha256_text
from contextfork.transcript import load_session
from contextfork.transcript.locate import project_dir
from tests.harness import cc_fixture
from tests.helpers import Repo, cli, count_parses, run_cli

STUB = re.compile(r"step (\d+), [\d,]+ chars, sha256 ([0-9a-f]{64})")


def _fork(repo: Repo, transcript: Path, *args: str) -> dict[str, object]:
    res = cli("fork", "--transcript", str(transcript), "--json", *args, cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    data: dict[str, object] = res.json()["data"]
    return data


def test_fork_writes_a_coherent_folded_session_and_keeps_the_original(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    before = sha256_file(t)
    data = _fork(repo, t)
    assert sha256_file(t) == before
    new_id = str(data["session_id"])
    fork = project_dir(repo.path) / f"{new_id}.jsonl"  # where `claude --resume` looks
    assert data["fork"] == str(fork) and fork.exists()
    assert data["resume_command"] == f"claude --resume {new_id}"
    original, forked = load_session(t), load_session(fork)
    assert forked.session_id == new_id and forked.format == "claude-code"
    assert len(forked.steps) == len(original.steps)
    assert [c.id for c in forked.tool_calls] == [c.id for c in original.tool_calls]
    lines = [json.loads(line) for line in fork.read_text().splitlines()]
    old_uuids = {json.loads(line)["uuid"] for line in t.read_text().splitlines()}
    seen: set[str] = set()
    for obj in lines:
        assert obj["sessionId"] == new_id
        assert obj["uuid"] not in old_uuids
        assert obj["parentUuid"] is None or obj["parentUuid"] in seen
        assert obj["forkedFrom"]["sessionId"] == cc_fixture.SESSION
        assert obj["forkedFrom"]["messageUuid"] in old_uuids
        seen.add(obj["uuid"])
    for raw in fork.read_text().splitlines():  # compact JSON, as Claude Code writes it
        assert raw == json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))


def test_stubs_name_step_and_hash_and_the_bytes_are_in_the_cold_store(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    data = _fork(repo, t)
    assert data["stubbed"] == 1
    forked = load_session(Path(str(data["fork"])))
    result = forked.steps[0].tool_results[0]
    m = STUB.search(result.content)
    assert (
        m and f"contextfork fold show {m.group(1)} --session {cc_fixture.SESSION}" in result.content
    )
    assert m.group(2) == sha256_text(cc_fixture.big_output())
    node = (
        repo.path
        / ".contextfork"
        / "cold"
        / cc_fixture.SESSION
        / "cold_nodes"
        / f"step_{int(m.group(1)):06d}.json"
    )
    shown = cli(
        "fold", "show", m.group(1), "--session", cc_fixture.SESSION, "--json", cwd=repo.path
    )
    assert shown.returncode == 0, shown.stderr
    stored = shown.json()["data"]["node"]
    payload = stored["content"]
    assert json.loads(node.read_text())["payload_sha256"] == stored["payload_sha256"]
    assert shown.json()["data"]["verified"] is True
    recovered = [json.loads(line) for line in payload.splitlines()]
    texts = [
        b["content"]
        for o in recovered
        for b in (o.get("message", {}).get("content") or [])
        if isinstance(b, dict) and b.get("type") == "tool_result" and b["tool_use_id"] == "toolu_01"
    ]
    assert texts and sha256_text(texts[0]) == m.group(2)
    # the small failing result was not stubbed
    assert "AssertionError" in forked.steps[1].tool_results[0].content
    line = next(
        json.loads(x)
        for x in Path(str(data["fork"])).read_text().splitlines()
        if "toolu_01" in x and '"tool_result"' in x
    )
    assert "toolUseResult" not in line


def test_fork_exports_a_package_with_trigger_fork(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    data = _fork(repo, t)
    meta = json.loads(
        (
            repo.path
            / ".contextfork"
            / "packages"
            / str(data["package_id"])
            / "session_metadata.json"
        ).read_text()
    )
    assert meta["trigger"] == "fork"
    assert meta["parent_session_id"] == cc_fixture.SESSION


def test_fork_prints_the_resume_command(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / "s.jsonl", repo.path)
    res = cli("fork", "--transcript", str(t), cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert re.search(r"^claude --resume [0-9a-f-]{36}$", res.stdout, re.M)


def test_the_forked_session_pages_from_its_parents_store(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    data = _fork(repo, t)
    ask = {
        "session_id": data["session_id"],
        "transcript_path": data["fork"],
        "cwd": str(repo.path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"show the {cc_fixture.BIG_MARKER} lines",
    }
    res = run_cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(ask))
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert cc_fixture.BIG_MARKER in ctx and cc_fixture.SESSION in ctx


def test_fork_refuses_a_non_claude_transcript(repo: Repo, tmp_path: Path) -> None:
    t = tmp_path / "chat.json"
    t.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    )
    res = cli("fork", "--transcript", str(t), cwd=repo.path)
    assert res.returncode == 2 and "fork writes Claude Code sessions" in res.stderr


def test_fork_of_the_dev_set_session_shrinks_the_footprint(
    repo: Repo, tmp_path: Path, transcripts_dir: Path
) -> None:
    src = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    t = tmp_path / "proj" / src.name
    t.parent.mkdir()
    shutil.copyfile(src, t)
    data = _fork(repo, t)
    assert sha256_file(t) == sha256_file(src)
    before, after = data["history_tokens_before"], data["history_tokens_after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert after["chain"] < before["chain"] and after["window"] <= before["window"]
    # it carries what the harness sends after the last compaction, and stubs only there
    live = load_session(t).live_steps()
    large = sum(1 for s in live for r in s.tool_results if len(r.content) >= 2000)
    assert int(str(data["stubbed"])) == large > 5
    assert data["lines_left_out"] and data["summary_carried"] is True
    assert len(load_session(Path(str(data["fork"]))).steps) == len(live)


@pytest.mark.parametrize("min_chars", ["50"])
def test_every_stub_verifies_even_when_many_are_made(
    repo: Repo, tmp_path: Path, min_chars: str
) -> None:
    t = cc_fixture.write(tmp_path / "proj" / "s.jsonl", repo.path)
    data = _fork(repo, t, "--min-chars", min_chars)
    assert data["stubbed"] == 2  # the error output is now long enough too
    assert load_session(Path(str(data["fork"]))).steps[1].tool_results[0].is_error


def test_a_fork_pages_in_what_it_folded_out_but_not_what_it_shows(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    data = _fork(repo, t, "--min-chars", "500")

    def ask(prompt: str) -> str:
        payload = {"session_id": data["session_id"], "transcript_path": data["fork"],
                   "cwd": str(repo.path), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        res = run_cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(payload))
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout) if res.stdout.strip() else {}
        return str((out.get("hookSpecificOutput") or {}).get("additionalContext", ""))

    assert cc_fixture.BIG_MARKER in ask(f"show the {cc_fixture.BIG_MARKER} lines")  # stubbed
    # the failing test's output was copied into the fork as it was: the model sees it already
    assert "<cold-step" not in ask("why did test_charge fail?")


def test_a_fork_after_a_compaction_that_would_not_shrink_the_next_request_writes_nothing_unless_forced(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    last = json.loads(t.read_text().splitlines()[-1])
    base = {k: last[k] for k in ("cwd", "sessionId", "version", "gitBranch", "userType")}
    boundary = {**base, "type": "system", "subtype": "compact_boundary", "isSidechain": False,
                "parentUuid": None, "logicalParentUuid": last["uuid"], "uuid": "cb-1",
                "content": "Conversation compacted", "timestamp": "2026-02-11T10:00:00.000Z",
                "compactMetadata": {"trigger": "manual", "preTokens": 12000}}
    summary = {**base, "type": "user", "isSidechain": False, "parentUuid": "cb-1",
               "uuid": "cs-1", "isCompactSummary": True, "timestamp": "2026-02-11T10:00:01.000Z",
               "message": {"role": "user", "content": "Summary: grep found the port lines."}}
    with open(t, "a", encoding="utf-8") as fh:
        for obj in (boundary, summary):
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
    before = sorted(p.name for p in t.parent.iterdir())

    data = _fork(repo, t, "--min-chars", "500")  # the large result is before the compaction

    assert data["fork"] is None and "would not make the next request smaller" in str(
        data["nothing_to_save"])
    assert sorted(p.name for p in t.parent.iterdir()) == before
    packages = repo.path / ".contextfork" / "packages"
    assert not packages.exists() or not any(packages.iterdir())  # nothing written at all
    forced = _fork(repo, t, "--min-chars", "500", "--force")
    assert forced["fork"] is not None and Path(str(forced["fork"])).is_file()
    assert [p.name for p in Path(str(forced["fork"])).parent.glob("*.jsonl")] == [
        f"{forced['session_id']}.jsonl"]  # the refused run left no session there


def _compacted_with_preserved_tail(path: Path, cwd: Path) -> Path:
    """A large result before a compaction, a preserved tail that is itself a large result, the
    harness's summary, then one more large result after it."""
    from tests.handoff.test_harvest import CC_SUMMARY
    from tests.transcript.builders import CC, text, tool_use, write_jsonl

    b = CC(session_id="22222222-3333-4444-8555-666666666666", cwd=str(cwd))
    before = "\n".join(f"early-output-frobnitz row {i}" for i in range(300))
    kept = "\n".join(f"preserved-output-quux row {i}" for i in range(300))
    after = "\n".join(f"later-output-blorp row {i}" for i in range(300))
    recs: list[Any] = [
        b.user("fix the billing port"),
        b.assistant("m1", [tool_use("t1", "Bash", command="grep -rn PORT")]), b.result("t1", before),
        b.assistant("m2", [text("now the config")])]  # fmt: skip
    recs += [b.assistant("m3", [tool_use("t2", "Bash", command="cat config.ini")])]
    head = b.last
    recs += [b.result("t2", kept)]
    tail = b.last
    assert head is not None and tail is not None
    boundary = b.boundary(tail)
    summary = b.summary(CC_SUMMARY)
    boundary["compactMetadata"]["preservedSegment"] = {
        "headUuid": head, "anchorUuid": summary["uuid"], "tailUuid": tail}
    recs += [boundary, summary, b.user("go on"),
             b.assistant("m4", [tool_use("t3", "Bash", command="cat app.log")]),
             b.result("t3", after), b.assistant("m5", [text("read the log")])]  # fmt: skip
    return write_jsonl(path, recs)


def test_a_fork_after_a_compaction_carries_only_what_the_harness_sends(
    repo: Repo, tmp_path: Path
) -> None:
    t = _compacted_with_preserved_tail(tmp_path / "proj" / "s.jsonl", repo.path)
    data = _fork(repo, t)
    fork = Path(str(data["fork"]))
    text = fork.read_text()
    # the lines before the compaction stay in the original: not even as a stub
    assert "early-output-frobnitz" not in text and '"t1"' not in text
    assert data["lines_left_out"] == 4
    # the preserved segment and what follows are carried, their large results stubbed
    assert "preserved-output-quux" not in text and "later-output-blorp" not in text
    assert data["stubbed"] == 2
    forked, original = load_session(fork), load_session(t)
    assert [c.id for c in forked.tool_calls] == ["t2", "t3"]
    assert [s.preserved for s in forked.steps] == [s.preserved for s in original.live_steps()]
    assert len(forked.compactions) == 1 and forked.live_steps() == forked.steps


def test_a_forks_brief_names_the_summary_it_carries_instead_of_repeating_it(
    repo: Repo, tmp_path: Path
) -> None:
    t = _compacted_with_preserved_tail(tmp_path / "proj" / "s.jsonl", repo.path)
    data = _fork(repo, t)
    assert data["summary_carried"] is True
    payload = {"session_id": data["session_id"], "transcript_path": data["fork"],
               "cwd": str(repo.path), "hook_event_name": "SessionStart", "source": "resume"}
    res = run_cli("hooks", "run", "session-start", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    brief = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "resuming from package" in brief
    for said in ("move the billing service", "Run the migration V12", "Re-run `pytest -q",
                 "the fixture pinned 5433"):
        assert said not in brief, said  # the fork's first message is the summary itself
    assert brief.count("In the compaction summary above") == 4
    assert abs(len(brief) - int(str(data["brief_chars"]))) <= 400  # what fork predicted
    # a session that does not carry the summary gets the parts in full
    other = cli("resume", str(data["package_id"]), "--json", cwd=repo.path)
    assert other.returncode == 0, other.stderr
    assert "move the billing service" in other.json()["data"]["brief"]


def test_fork_parses_the_original_transcript_once(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once, with its subagents, for the fork, its fold and the export's seed (issue 27: three
    parses, then two — the seed read it again for its subagents)."""
    t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    reads = count_parses(monkeypatch, t)
    data = _fork(repo, t)
    assert data["stubbed"], "the fixture should fold something out"
    assert reads == [True], reads


def test_the_plan_carries_each_lines_skeleton_as_the_original_has_it(
    repo: Repo, tmp_path: Path
) -> None:
    """The first pass keeps four keys of each line (issue 27); a carried line's skeleton is
    taken from its second parse before the fork renames it: the boundary's preserved segment
    still names the original's uuids there."""
    from contextfork.cold.api import fold_session
    from contextfork.harness.forkplan import build_fork
    from contextfork.transcript.claude_tree import skeleton

    t = _compacted_with_preserved_tail(tmp_path / "proj" / "s.jsonl", repo.path)
    original = load_session(t)
    orig_id = str(original.session_id)
    fold_session(t, repo=repo.path, session=orig_id, loaded=original)
    plan = build_fork(original, repo.path, orig_id, "99999999-3333-4444-8555-666666666666")
    lines = {}
    with t.open("rb") as fh:
        offset = 0
        for raw in fh:
            lines[offset] = json.loads(raw)
            offset += len(raw)
    assert plan.source and plan.stubs
    for rec in plan.source:
        assert rec.obj == skeleton(lines[rec.offset]), rec.offset
    assert any("compactMetadata" in rec.obj for rec in plan.source)
