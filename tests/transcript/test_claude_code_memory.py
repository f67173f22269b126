"""A whole Claude Code session is read keeping only what the steps are built from (issue 27).

Progress lines, file-history snapshots and queue operations keep only their structural keys
once parsed, conversation lines lose ``toolUseResult``; the session built from them must be
exactly the one built from whole objects.
"""

from __future__ import annotations

import gc
from pathlib import Path

from contextfork.transcript import claude_code, load_session
from contextfork.transcript._jsonl import read_records


def _whole(path: Path) -> dict[str, object]:
    records = read_records(path).records  # every object whole, as before the slimming
    agent = claude_code._agent_id(records) if claude_code._sidechain_file(records) else None
    return claude_code.build_session(records, path=path, malformed=0, agent_id=agent).model_dump()


def test_slimmed_lines_build_the_same_session_as_whole_ones(transcripts_dir: Path) -> None:
    files = sorted((transcripts_dir / "claude-code").rglob("*.jsonl"))
    assert len(files) >= 4
    for path in files:
        slim = claude_code.load(path, include_subagents=False).model_dump()
        assert slim == _whole(path), path


def test_slimmed_lines_keep_only_structural_keys(transcripts_dir: Path) -> None:
    path = transcripts_dir / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    records = read_records(path, claude_code._slim).records
    progress = [r for r in records if r.obj.get("type") == "progress"]
    assert progress and all("data" not in r.obj for r in progress)
    assert all(set(r.obj) <= set(claude_code._STRUCTURE) for r in progress)
    assert any("message" in r.obj for r in records if r.obj.get("type") == "assistant")
    assert all("toolUseResult" not in r.obj for r in records)
    assert any('"toolUseResult"' in r.text for r in records)  # the raw line still has it


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
