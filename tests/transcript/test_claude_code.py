from __future__ import annotations

from pathlib import Path

import pytest

from contextfork.errors import NotFoundError, UsageError
from contextfork.transcript import load_session
from contextfork.transcript.model import TextBlock, ThinkingBlock, ToolCall, ToolResult
from tests.helpers import run_cli
from tests.transcript.builders import CC, text, thinking, tool_use, write_jsonl


def build_session_file(path: Path) -> Path:
    cc = CC()
    recs = [
        cc.user("fix the bug"),                                    # u1
        cc.assistant("m1", [thinking("look first")]),              # u2
        cc.assistant("m1", [tool_use("c1", "Bash", command="make test")]),  # u3
        cc.progress(),                                             # u4
        cc.assistant("m1", [tool_use("c2", "Read", file_path="/home/u/proj/src/a.py")]),  # u5
        cc.result("c1", "Exit code 2\nFAILED test_x", parent="u3", is_error=True),  # u6 sibling
        cc.result("c2", "print('a')", parent="u5"),                # u7
        cc.assistant("m2", [text("done")], usage=(5, 20, 10, 2000)),  # u8
        cc.user("try another", parent="u8"),                       # u9  (abandoned)
        cc.assistant("m3", [text("old branch")]),                  # u10 (abandoned)
        cc.user("rewound prompt", parent="u8"),                    # u11 rewind
        cc.assistant("m4", [text("new branch")], usage=(1, 5, 50, 3000)),  # u12
    ]
    recs.append(cc.boundary("u12"))                                # u13
    recs.append(cc.summary("This session is being continued ..."))  # u14
    recs.append(cc.user("continue"))                               # u15
    recs.append(cc.assistant("m5", [text("editing")], usage=(2, 10, 40, 900)))  # u16
    recs.append(cc.assistant("m5", [tool_use("c3", "Edit", file_path="/home/u/proj/src/app.py")],
                             usage=(2, 50, 40, 900)))             # u17
    recs.append(cc.result("c3", "ok"))                             # u18
    recs.insert(3, "{this is not json")
    return write_jsonl(path, recs, tail='{"type":"assistant","partial')


@pytest.fixture
def cc_file(tmp_path: Path) -> Path:
    return build_session_file(tmp_path / "sess-1.jsonl")


def test_one_api_response_split_over_lines_is_one_step_with_one_usage(cc_file: Path) -> None:
    s = load_session(cc_file)
    assert [st.message_id for st in s.steps] == ["m1", "m2", "m4", "m5"]
    step4 = s.steps[3]
    assert step4.usage is not None and step4.usage.output_tokens == 50
    assert step4.usage.context_tokens == 2 + 40 + 900


def test_prompt_opens_the_step_it_triggers_and_parallel_results_join_their_call(cc_file: Path) -> None:
    s = load_session(cc_file)
    first = s.steps[0]
    assert isinstance(first.blocks[0], TextBlock) and first.blocks[0].role == "user"
    assert first.blocks[0].text == "fix the bug"
    assert isinstance(first.blocks[1], ThinkingBlock)
    assert [c.id for c in first.tool_calls] == ["c1", "c2"]
    assert [r.call_id for r in first.tool_results] == ["c1", "c2"]
    assert first.tool_results[0].is_error and first.tool_results[0].exit_code == 2
    assert all(isinstance(b, (TextBlock, ThinkingBlock, ToolCall, ToolResult)) for b in first.blocks)


def test_rewound_branch_is_left_out_and_counted(cc_file: Path) -> None:
    s = load_session(cc_file)
    texts = [b.text for st in s.steps for b in st.blocks if isinstance(b, TextBlock)]
    assert "old branch" not in texts and "try another" not in texts
    assert "rewound prompt" in texts
    assert s.abandoned_lines == 2


def test_compact_boundary_and_summary_are_a_compaction_before_the_next_step(cc_file: Path) -> None:
    s = load_session(cc_file)
    assert len(s.compactions) == 1
    c = s.compactions[0]
    assert (c.before_step, c.trigger, c.pre_tokens) == (4, "auto", 167000)
    assert [st.after_compaction for st in s.steps] == [False, False, False, True]
    summary = s.steps[3].user_texts[0]
    assert summary.meta and summary.text.startswith("This session is being continued")
    assert s.steps[3].user_texts[1].text == "continue" and not s.steps[3].user_texts[1].meta


def test_malformed_lines_are_counted_and_a_partial_tail_is_ignored(cc_file: Path) -> None:
    s = load_session(cc_file)
    assert s.malformed_lines == 1
    assert len(s.steps) == 4


def test_raw_lines_are_the_exact_source_bytes_with_offsets(cc_file: Path) -> None:
    data = cc_file.read_bytes()
    s = load_session(cc_file)
    for st in s.steps:
        for r in st.raw:
            assert data[r.offset : r.offset + len(r.text.encode())] == r.text.encode()
        assert st.raw_bytes()
    # the live lines all land somewhere; the abandoned ones and the garbage do not
    assert sum(len(st.raw) for st in s.steps) == 16


def test_session_fields_come_from_the_envelope(cc_file: Path) -> None:
    s = load_session(cc_file)
    assert (s.format, s.session_id, s.cwd, s.git_branch) == ("claude-code", "sess-1", "/home/u/proj", "main")
    assert s.model == "claude-opus-4-6"
    assert s.started_at and s.ended_at and s.started_at < s.ended_at


def test_subagents_are_read_from_the_session_folder_as_separate_sessions(tmp_path: Path) -> None:
    main = build_session_file(tmp_path / "sess-1.jsonl")
    sub = CC()
    recs = [sub.user("explore the repo"), sub.assistant("s1", [tool_use("x1", "Grep", pattern="foo")]),
            sub.result("x1", "a.py:1:foo"), sub.assistant("s2", [text("found it")])]
    for r in recs:
        r["isSidechain"] = True
        r["agentId"] = "a123"
    write_jsonl(tmp_path / "sess-1" / "subagents" / "agent-a123.jsonl", recs)
    s = load_session(main)
    assert len(s.steps) == 4
    assert len(s.subagents) == 1
    agent = s.subagents[0]
    assert (agent.agent_id, len(agent.steps), len(agent.tool_calls)) == ("a123", 2, 1)


def test_inline_sidechain_lines_are_not_part_of_the_main_conversation(tmp_path: Path) -> None:
    cc = CC()
    side = cc.assistant("side1", [text("subagent talk")], parent=None)
    side["isSidechain"] = True
    recs = [cc.user("hello", parent=None), cc.assistant("m1", [text("hi")]), side]
    s = load_session(write_jsonl(tmp_path / "s.jsonl", recs))
    assert [st.message_id for st in s.steps] == ["m1"]
    assert [sub.steps[0].message_id for sub in s.subagents] == ["side1"]


def test_a_trailing_prompt_without_answer_is_kept_as_a_last_step(tmp_path: Path) -> None:
    cc = CC()
    recs = [cc.user("one"), cc.assistant("m1", [text("ok")]), cc.user("two")]
    s = load_session(write_jsonl(tmp_path / "s.jsonl", recs))
    assert len(s.steps) == 2 and s.steps[1].usage is None
    assert s.steps[1].user_texts[0].text == "two"


def test_harness_injected_user_text_is_marked_meta(tmp_path: Path) -> None:
    cc = CC()
    recs = [cc.user("<command-name>/mcp</command-name>"), cc.user("real request"),
            cc.assistant("m1", [text("ok")]), cc.user("[Request interrupted by user]")]
    s = load_session(write_jsonl(tmp_path / "s.jsonl", recs))
    assert [(b.text[:5], b.meta) for st in s.steps for b in st.user_texts] == [
        ("<comm", True), ("real ", False), ("[Requ", True)
    ]


def test_a_file_of_garbage_is_one_clear_error_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\nstill not\n")
    with pytest.raises(UsageError, match=r"bad\.jsonl: line 1"):
        load_session(bad)
    res = run_cli("status", "--transcript", str(bad), cwd=tmp_path)
    assert res.returncode == 2
    assert "bad.jsonl" in res.stderr and "line 1" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_missing_transcript_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_session(tmp_path / "nope.jsonl")
    res = run_cli("status", "--transcript", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert res.returncode == 4 and "Traceback" not in res.stderr
