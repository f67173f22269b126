"""The compact baseline replays Claude Code 2.1 compactions with their preserved segment."""

from __future__ import annotations

from pathlib import Path

from contextfork.render.api import render
from contextfork.render.policies import policy
from contextfork.transcript import load_session
from tests.transcript import cc21


def _shown(tmp_path: Path, t: int) -> str:
    s = load_session(cc21.write(tmp_path / "s.jsonl"))
    return "\n".join(m.content for m in render(s, t, policy("compact")).messages)


def test_the_recorded_compaction_keeps_the_preserved_messages_and_drops_the_rest(
    tmp_path: Path,
) -> None:
    after_first = _shown(tmp_path, 5)
    assert "Fixed the port in src/port.py." in after_first  # step 4, preserved
    assert "test_port fails" not in after_first  # step 2, summarized away
    after_second = _shown(tmp_path, 7)
    assert "Lint is clean." in after_second  # step 6, preserved by the second compaction
    assert "Fixed the port in src/port.py." not in after_second
