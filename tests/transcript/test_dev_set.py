"""Every real transcript in ../shared/data reads with the counts checked by hand.

The expected figures were established independently of the adapters: unique ``message.id`` and
``tool_use`` blocks counted with jq-style one-off scripts for Claude Code, assistant messages and
``toolCall`` blocks for pi, and assistant messages / replies with exactly one ```bash block for
mini-swe-agent (mini-swe-agent's own rule), then compared with each file's structure by eye.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfork.transcript import load_session

# relative path -> (format, steps, tool calls, tool results, compactions)
EXPECTED: dict[str, tuple[str, int, int, int, int]] = {
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl": ("claude-code", 152, 186, 186, 1),
    "claude-code/short.jsonl": ("claude-code", 2, 2, 2, 0),
    "claude-code/tool_heavy.jsonl": ("claude-code", 5, 6, 6, 0),
    "claude-code/subagent.jsonl": ("claude-code", 12, 16, 16, 0),
    "codex/sample_codex_session.jsonl": ("codex", 1, 0, 0, 0),
    "pi/large-session.jsonl": ("pi", 453, 391, 373, 0),
    "mini-swe-agent/django__django-16560.traj.json": ("mini-swe-agent", 145, 145, 145, 0),
    "mini-swe-agent/matplotlib__matplotlib-24177.traj.json": ("mini-swe-agent", 74, 72, 72, 0),
    "mini-swe-agent/pytest-dev__pytest-7490.traj.json": ("mini-swe-agent", 97, 94, 94, 0),
    "mini-swe-agent/sphinx-doc__sphinx-9229.traj.json": ("mini-swe-agent", 142, 132, 132, 0),
    "mini-swe-agent/sympy__sympy-19040.traj.json": ("mini-swe-agent", 132, 122, 122, 0),
}


def test_every_dev_set_file_is_covered(transcripts_dir: Path) -> None:
    found = {
        str(p.relative_to(transcripts_dir))
        for p in transcripts_dir.glob("*/*")
        if p.is_file() and p.name != "README.md"
    }
    assert found == set(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_dev_set_counts(transcripts_dir: Path, rel: str) -> None:
    fmt, steps, calls, results, comps = EXPECTED[rel]
    path = transcripts_dir / rel
    s = load_session(path)
    got = (s.format, len(s.steps), len(s.tool_calls),
           sum(len(st.tool_results) for st in s.steps), len(s.compactions))
    assert got == (fmt, steps, calls, results, comps)
    assert s.malformed_lines == 0
    assert [st.index for st in s.steps] == list(range(1, steps + 1))
    data = path.read_bytes()
    for st in s.steps:
        for r in st.raw:
            assert data[r.offset : r.offset + len(r.text.encode())] == r.text.encode()


def test_real_claude_code_session_compaction_and_subagents(transcripts_dir: Path) -> None:
    s = load_session(transcripts_dir / "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    c = s.compactions[0]
    assert (c.before_step, c.trigger, c.pre_tokens) == (103, "auto", 167094)
    assert sum(st.after_compaction for st in s.steps) == 50
    assert s.abandoned_lines == 0
    subs = {a.agent_id: (len(a.steps), len(a.tool_calls)) for a in s.subagents}
    assert subs == {"a881341": (3, 2), "acompact-fffbd0": (1, 0)}
    assert sum(1 for st in s.steps for r in st.tool_results if r.is_error) == 7
