from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.errors import UsageError
from contextfork.transcript import load_session
from contextfork.transcript.detect import detect_format
from contextfork.transcript.locate import current_transcript, project_slug
from tests.transcript.builders import write_jsonl


def _codex(ts: int, kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": f"2025-12-28T12:00:{ts:02d}.000Z", "type": kind, "payload": payload}


def codex_file(path: Path) -> Path:
    usage = {"input_tokens": 1200, "cached_input_tokens": 1000, "output_tokens": 40,
             "reasoning_output_tokens": 10, "total_tokens": 1240}
    recs = [
        _codex(0, "session_meta", {"id": "cx-1", "cwd": "/w", "instructions": "be nice"}),
        _codex(1, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>"}]}),
        _codex(2, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "run the tests"}]}),
        _codex(3, "turn_context", {"cwd": "/w", "model": "gpt-5.2-codex"}),
        _codex(4, "response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "I'll run pytest"}], "encrypted_content": "x"}),
        _codex(5, "response_item", {"type": "function_call", "name": "shell", "call_id": "call_1",
                                    "arguments": json.dumps({"command": ["bash", "-lc", "pytest"]})}),
        _codex(6, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage,
                                                                "last_token_usage": usage}}),
        _codex(7, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage,
                                                                "last_token_usage": usage}}),
        _codex(8, "response_item", {"type": "function_call_output", "call_id": "call_1",
                                    "output": "Exit code: 1\nWall time: 1 seconds\nOutput:\nFAILED"}),
        _codex(9, "response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2",
                                    "input": "*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n*** End Patch"}),
        _codex(10, "response_item", {"type": "custom_tool_call_output", "call_id": "call_2",
                                     "output": json.dumps({"output": "Success", "metadata": {"exit_code": 0}})}),
        _codex(11, "compacted", {"message": "summary of the work so far"}),
        _codex(12, "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Fixed."}]}),
    ]
    return write_jsonl(path, recs)


def test_codex_rollout_calls_results_usage_and_compaction(tmp_path: Path) -> None:
    s = load_session(codex_file(tmp_path / "rollout-1.jsonl"))
    assert s.format == "codex" and s.session_id == "cx-1" and s.system_prompt == "be nice"
    assert len(s.steps) == 3
    one, two, three = s.steps
    assert [b.text for b in one.user_texts] == ["<environment_context>\n  <cwd>/w</cwd>", "run the tests"]
    assert one.user_texts[0].meta and not one.user_texts[1].meta
    assert one.tool_calls[0].input == {"command": ["bash", "-lc", "pytest"]}
    assert one.tool_results[0].exit_code == 1 and one.tool_results[0].is_error
    assert one.usage is not None and one.usage.cache_read_input_tokens == 1000
    assert one.usage.context_tokens == 1200
    assert two.tool_calls[0].name == "apply_patch" and not two.tool_results[0].is_error
    assert s.compactions[0].before_step == 3 and three.after_compaction
    assert three.user_texts[0].meta


def pi_tree_file(path: Path) -> Path:
    def msg(i: str, parent: str | None, m: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": parent, "timestamp": f"2025-11-20T10:00:0{i[-1]}Z", "message": m}

    usage = {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 20}
    recs = [
        {"type": "session", "version": 3, "id": "pi-1", "timestamp": "2025-11-20T10:00:00Z", "cwd": "/p"},
        msg("e1", None, {"role": "user", "content": [{"type": "text", "text": "read it"}]}),
        msg("e2", "e1", {"role": "assistant", "content": [
            {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a.md"}}],
            "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "toolUse"}),
        msg("e3", "e2", {"role": "toolResult", "toolCallId": "t1", "toolName": "read",
                         "content": [{"type": "text", "text": "# A"}], "isError": False}),
        msg("e4", "e3", {"role": "assistant", "content": [{"type": "text", "text": "abandoned"}], "usage": usage}),
        msg("e5", "e3", {"role": "user", "content": [{"type": "text", "text": "other way"}]}),
        {"type": "compaction", "id": "e6", "parentId": "e5", "timestamp": "2025-11-20T10:00:06Z",
         "summary": "we read a.md", "firstKeptEntryId": "e5", "tokensBefore": 9000},
        msg("e7", "e6", {"role": "assistant", "content": [{"type": "text", "text": "done"}], "usage": usage}),
    ]
    return write_jsonl(path, recs)


def test_pi_tree_follows_the_newest_branch(tmp_path: Path) -> None:
    s = load_session(pi_tree_file(tmp_path / "pi.jsonl"))
    assert s.format == "pi" and s.session_id == "pi-1"
    texts = [getattr(b, "text", "") for st in s.steps for b in st.blocks]
    assert "abandoned" not in texts and "done" in texts
    assert len(s.steps) == 2 and len(s.tool_calls) == 1
    assert s.steps[0].usage is not None and s.steps[0].usage.context_tokens == 130
    assert s.compactions[0].pre_tokens == 9000 and s.compactions[0].before_step == 2


def test_pi_linear_session_without_ids(tmp_path: Path) -> None:
    recs = [
        {"type": "session", "id": "old", "timestamp": "2025-11-20T23:33:50Z", "cwd": "/p", "modelId": "m"},
        {"type": "message", "timestamp": "2025-11-20T23:33:51Z", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
        {"type": "message", "timestamp": "2025-11-20T23:33:52Z", "message": {"role": "assistant", "content": [], "stopReason": "aborted",
                                                                            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
        {"type": "thinking_level_change", "timestamp": "2025-11-20T23:33:53Z", "thinkingLevel": "high"},
    ]
    s = load_session(write_jsonl(tmp_path / "pi.jsonl", recs))
    assert s.format == "pi" and len(s.steps) == 1 and len(s.steps[0].raw) == 4


def _pi_bash(i: int, call: str, text: str, is_error: bool, tool: str = "bash") -> dict[str, object]:
    return {"type": "message", "timestamp": f"2025-11-20T10:00:{i:02d}Z", "message": {
        "role": "toolResult", "toolCallId": call, "toolName": tool, "isError": is_error,
        "content": [{"type": "text", "text": text}], "timestamp": 1763632800000 + i}}


def pi_bash_file(path: Path) -> Path:
    """What pi 0.73's bash tool records: a non-zero exit fails the call with its output and a
    last line "Command exited with code N"; success is plain output; an abort says so."""
    calls = [{"type": "toolCall", "id": c, "name": n, "arguments": {"command": cmd}}
             for c, n, cmd in (("b1", "bash", "npm test"), ("b2", "bash", "ls"),
                               ("b3", "bash", "sleep 60"), ("r1", "read", "x"))]
    recs = [
        {"type": "session", "id": "pi-b", "timestamp": "2025-11-20T10:00:00Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2025-11-20T10:00:01Z", "message": {
            "role": "bashExecution", "command": "make lint", "output": "lint failed",
            "exitCode": 3, "cancelled": False, "truncated": False, "timestamp": 1763632801000}},
        {"type": "message", "timestamp": "2025-11-20T10:00:02Z", "message": {
            "role": "assistant", "content": calls, "usage": {"input": 1, "output": 1}}},
        _pi_bash(3, "b1", "FAILED test_x\n\nCommand exited with code 2", True),
        _pi_bash(4, "b2", "a.py\nb.py", False),
        _pi_bash(5, "b3", "\n\nCommand aborted", True),
        _pi_bash(6, "r1", "Command exited with code 9", True, tool="read"),
    ]
    return write_jsonl(path, recs)


def test_pi_bash_results_keep_their_exit_code(tmp_path: Path) -> None:
    from contextfork.harness.pi.messages import LiveSteps

    f = pi_bash_file(tmp_path / "pi.jsonl")
    s = load_session(f)
    codes = [(r.call_id, r.exit_code, r.is_error) for r in s.steps[0].tool_results]
    assert codes == [("b1", 2, True), ("b2", 0, False), ("b3", None, True), ("r1", None, True)]
    assert s.steps[0].user_texts[0].text == "$ make lint\nlint failed\n(exit code 3)"
    live = LiveSteps()  # the pi extension's live array follows the same rules
    live.extend([json.loads(line)["message"] for line in f.read_text().splitlines()[1:]])
    assert [(r.call_id, r.exit_code) for r in live.steps[0].tool_results] == [
        ("b1", 2), ("b2", 0), ("b3", None), ("r1", None)]
    assert live.steps[0].user_texts[0].text == "$ make lint\nlint failed\n(exit code 3)"


def test_status_names_the_exit_code_of_a_failed_pi_bash_step(tmp_path: Path) -> None:
    from tests.helpers import cli

    f = pi_bash_file(tmp_path / "pi.jsonl")
    failed = cli("status", "--json", "--transcript", str(f), cwd=tmp_path).json()["data"][
        "failed_commands"]
    assert [(x["command"], x["exit_code"]) for x in failed] == [
        ("npm test", 2), ("sleep 60", None), ("x", None)]


def test_the_real_pi_session_keeps_its_bash_exit_codes(transcripts_dir: Path) -> None:
    from collections import Counter

    from contextfork.telemetry.accounting import failed_commands

    s = load_session(transcripts_dir / "pi" / "large-session.jsonl")
    bash_ids = {c.id for c in s.tool_calls if c.name == "bash"}
    bash = Counter(r.exit_code for st in s.steps for r in st.tool_results if r.call_id in bash_ids)
    assert bash == Counter({0: 173, 1: 14, 2: 3, None: 2})  # None: two aborted commands
    failed = failed_commands(s)
    assert [x["step"] for x in failed if x["exit_code"] == 2] == [26, 27, 54]


def mini_file(path: Path) -> Path:
    def usage(p: int, c: int) -> dict[str, object]:
        return {"response": {"model": "google/gemini-3-pro-preview",
                             "usage": {"prompt_tokens": p, "completion_tokens": c,
                                       "prompt_tokens_details": {"cached_tokens": p - 10}}}}

    traj = {
        "info": {"exit_status": "Submitted", "model_stats": {"api_calls": 3}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "<pr_description>fix ünïcode</pr_description>"},
            {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls\n```", "extra": usage(100, 5)},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
            {"role": "assistant", "content": "two\n```bash\na\n```\n```bash\nb\n```", "extra": usage(200, 5)},
            {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
            {"role": "assistant", "content": "```bash\npytest\n```", "extra": usage(300, 5)},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>\nFAILED\n</output>"},
        ],
        "trajectory_format": "mini-swe-agent-1",
    }
    path.write_text(json.dumps(traj, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def test_mini_swe_agent_bash_blocks_become_calls_and_observations_results(tmp_path: Path) -> None:
    f = mini_file(tmp_path / "x.traj.json")
    s = load_session(f)
    assert s.format == "mini-swe-agent" and s.system_prompt == "You are a helpful assistant."
    assert len(s.steps) == 3 and len(s.tool_calls) == 2
    assert s.steps[0].tool_calls[0].input == {"command": "ls"}
    assert s.steps[0].tool_results[0].exit_code == 0
    assert s.steps[1].tool_calls == [] and s.steps[2].user_texts[0].meta
    assert s.steps[2].tool_results[0].is_error and s.steps[2].tool_results[0].exit_code == 1
    assert s.steps[2].usage is not None and s.steps[2].usage.context_tokens == 300
    data = f.read_bytes()
    for st in s.steps:
        for r in st.raw:
            assert data[r.offset : r.offset + len(r.text.encode())] == r.text.encode()


def test_plain_openai_chat_array(tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "a.py"},
        {"role": "assistant", "content": "one file"},
    ]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(msgs))
    s = load_session(f)
    assert s.format == "openai-chat" and s.system_prompt == "sys"
    assert len(s.steps) == 2 and s.steps[0].tool_calls[0].input == {"path": "."}
    assert s.steps[0].tool_results[0].content == "a.py"


def test_plain_anthropic_messages_object(tmp_path: Path) -> None:
    body = {"system": "be brief", "messages": [
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": True}]},
        {"role": "assistant", "content": [{"type": "text", "text": "failed"}]},
    ]}
    f = tmp_path / "req.json"
    f.write_text(json.dumps(body, indent=1))
    s = load_session(f)
    assert s.format == "anthropic-messages" and s.system_prompt == "be brief"
    assert len(s.steps) == 2 and s.steps[0].tool_results[0].is_error


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"hello": "world"}\n', "unknown transcript format"),
        ("", "empty file"),
        ("[1, 2,", "line 1"),
        ('{"messages": "nope"}', "messages"),
    ],
)
def test_unknown_or_corrupt_files_are_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "weird.json"
    f.write_text(content)
    with pytest.raises(UsageError, match=message):
        load_session(f)


def test_detect_format_of_each_fixture(tmp_path: Path) -> None:
    assert detect_format(codex_file(tmp_path / "c.jsonl")) == "codex"
    assert detect_format(pi_tree_file(tmp_path / "p.jsonl")) == "pi"
    assert detect_format(mini_file(tmp_path / "m.traj.json")) == "mini-swe-agent"


def test_locate_finds_the_newest_session_of_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "my proj.v2"
    project.mkdir()
    cfg = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    slug = project_slug(project)
    assert "/" not in slug and " " not in slug and "." not in slug and slug.startswith("-")
    folder = cfg / "projects" / slug
    folder.mkdir(parents=True)
    old, new = folder / "a.jsonl", folder / "b.jsonl"
    old.write_text("{}\n")
    new.write_text("{}\n")
    import os

    os.utime(old, ns=(1, 1))
    assert current_transcript(project) == new
    assert current_transcript(tmp_path) is None
