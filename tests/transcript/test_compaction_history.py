"""Claude Code 2.1.x compactions: the whole logical history is read, the live view is known."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.transcript import load_session
from tests.helpers import Repo, run_cli
from tests.transcript import cc21


def test_history_is_read_across_two_compactions_even_when_a_logical_parent_is_missing(
    tmp_path: Path,
) -> None:
    s = load_session(cc21.write(tmp_path / "s.jsonl"))
    assert len(s.steps) == 7
    assert [c.before_step for c in s.compactions] == [5, 7]
    said = [
        next((b.text for b in st.blocks if b.type == "text" and b.role == "assistant"), None)
        for st in s.steps
    ]
    assert said[1] == "test_port fails: 5434 != 5433." and said[-1] == "5433."
    assert [c.name for c in s.tool_calls] == ["Bash", "Edit", "Bash"]
    assert s.steps[0].tool_results[0].is_error


def test_preserved_segment_is_part_of_the_live_view_after_the_last_compaction(
    tmp_path: Path,
) -> None:
    two = load_session(cc21.write(tmp_path / "two.jsonl"))
    assert [st.index for st in two.live_steps()] == [6, 7]
    one = load_session(cc21.write(tmp_path / "one.jsonl", second_compaction=False))
    assert [st.index for st in one.live_steps()] == [3, 4, 5, 6]


def test_step_identity_is_the_uuid_of_the_first_line_and_survives_growth(tmp_path: Path) -> None:
    small = load_session(cc21.write(tmp_path / "a.jsonl", second_compaction=False))
    grown = load_session(cc21.write(tmp_path / "b.jsonl", grow=3))
    assert small.steps[0].key == f"uuid:{cc21.uid('p1')}"
    assert small.steps[1].key == f"uuid:{cc21.uid('s2')}"
    assert [st.key for st in small.steps] == [st.key for st in grown.steps][: len(small.steps)]
    assert len({st.key for st in grown.steps}) == len(grown.steps)


def test_attachment_lines_stay_in_their_step_and_bookkeeping_lines_are_counted(
    tmp_path: Path,
) -> None:
    t = cc21.write(tmp_path / "s.jsonl")
    s = load_session(t)
    kept = "".join(r.text for st in s.steps for r in st.raw)
    for name in ("a1", "a2", "a3"):
        assert cc21.uid(name) in kept
    assert s.malformed_lines == 0
    # the uuid-less bookkeeping lines (api-request, cost-state, ...) are not conversation
    assert '"api-request-blob"' not in kept
    for line in t.read_text().splitlines():
        json.loads(line)


def test_status_after_two_compactions_counts_every_step_and_the_failure(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc21.write(tmp_path / "s.jsonl")
    data = run_cli("status", "--transcript", str(t), "--json", cwd=repo.path).json()["data"]
    assert (data["steps"]["total"], data["steps"]["since_compaction"]) == (7, 2)
    assert len(data["failed_commands"]) == 1 and len(data["compactions"]) == 2


def test_keys_of_pi_and_codex_steps_survive_the_file_growing(
    tmp_path: Path, transcripts_dir: Path
) -> None:
    # this pi file predates entry ids, so both fall back to the first line's byte offset
    for src, prefix in (("pi/large-session.jsonl", ("id:", "offset:")),
                        ("codex/sample_codex_session.jsonl", ("offset:",))):
        lines = (transcripts_dir / src).read_text(encoding="utf-8").splitlines(keepends=True)
        part = tmp_path / f"part-{Path(src).name}"
        part.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
        whole, half = load_session(transcripts_dir / src), load_session(part)
        keys = [s.key for s in whole.steps]
        assert all(k and k.startswith(prefix) for k in keys) and len(set(keys)) == len(keys)
        # every step but the (possibly unfinished) last keeps its key as the file grows
        assert [s.key for s in half.steps][:-1] == keys[: len(half.steps) - 1]
