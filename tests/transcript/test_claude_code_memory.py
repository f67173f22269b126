"""A whole Claude Code session is read without holding it whole (issue 27).

The first pass keeps of each line only its skeleton (structure keys, message and call ids); the
live lines are parsed again one at a time to build the steps. The session built that way must be
exactly the one built from whole objects and texts held in memory.
"""

from __future__ import annotations

import gc
from pathlib import Path

from contextfork.transcript import claude_code, claude_tree, load_session
from contextfork.transcript._jsonl import Record, read_records, reread
from contextfork.transcript.source import SourceFile


def _whole(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    records = [  # every object whole and every text held, as before the skeletons
        Record.held(r.lineno, r.offset, data[r.offset : r.offset + r.length].decode(), r.obj)
        for r in read_records(path).records
    ]
    agent = claude_tree.first_agent_id(records) if claude_tree.sidechain_file(records) else None
    return claude_code.build_session(records, path=path, malformed=0, agent_id=agent).model_dump()


def test_slimmed_lines_build_the_same_session_as_whole_ones(transcripts_dir: Path) -> None:
    files = sorted((transcripts_dir / "claude-code").rglob("*.jsonl"))
    assert len(files) >= 4
    for path in files:
        slim = claude_code.load(path, include_subagents=False).model_dump()
        assert slim == _whole(path), path


def test_skeletons_keep_only_structure_and_call_ids(transcripts_dir: Path) -> None:
    path = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    records = read_records(path, claude_tree.skeleton).records
    progress = [r for r in records if r.obj.get("type") == "progress"]
    assert progress and all(set(r.obj) <= set(claude_tree._STRUCTURE) for r in progress)
    conversation = [r for r in records if r.obj.get("type") in ("user", "assistant")]
    assert all(set(r.obj) <= {*claude_tree._STRUCTURE, "message"} for r in conversation)
    messages = [r.obj["message"] for r in conversation if "message" in r.obj]
    assert any("content" in m for m in messages)
    assert all(set(m) <= {"id", "content"} for m in messages)
    blocks = [b for m in messages for b in m.get("content", [])]
    assert all(set(b) in ({"type", "id"}, {"type", "tool_use_id"}) for b in blocks)
    lines = [data for _, data in reread(SourceFile(path), records)]
    assert any(b'"toolUseResult"' in d for d in lines)  # the raw line still has it


def test_loading_a_session_leaves_the_garbage_collector_as_it_found_it(transcripts_dir: Path) -> None:
    path = transcripts_dir / "claude-code" / "short.jsonl"
    assert gc.isenabled()
    load_session(path)
    assert gc.isenabled()
    gc.disable()
    try:
        load_session(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def _steps_alive() -> int:
    from contextfork.transcript.model import Step

    gc.collect()
    return sum(isinstance(o, Step) for o in gc.get_objects())


def test_between_runs_once_when_the_skeletons_are_gone_and_no_step_is_built(
    transcripts_dir: Path, tmp_path: Path
) -> None:
    """Where ``fold session`` and ``fork`` load the tokenizer's vocabulary (``tokens.warm``):
    in the room the first pass freed, not on top of the built session (-9 MB at 55 MB)."""
    path = tmp_path / "s.jsonl"  # a file of its own: no session of it is held yet
    path.write_bytes((transcripts_dir / "claude-code" / "tool_heavy.jsonl").read_bytes())
    before = _steps_alive()
    seen: list[int] = []
    session = load_session(path, include_subagents=False, between=lambda: seen.append(_steps_alive()))
    assert seen == [before]
    assert session.steps
    again: list[int] = []
    assert load_session(path, include_subagents=False, between=lambda: again.append(1)) is session
    assert again == [1]  # a held session: still run once
