"""The real recorded session with one auto-compaction: every command sees all of its steps
(a fork carries its live view)."""

from __future__ import annotations

import shutil
from pathlib import Path

from contextfork.transcript import load_session
from tests.helpers import Repo, cli

BIG = "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def test_the_real_compacted_session_keeps_its_whole_history_in_every_command(
    repo: Repo, tmp_path: Path, transcripts_dir: Path
) -> None:
    src = transcripts_dir / BIG
    s = load_session(src)
    assert len(s.steps) == 152 and len(s.compactions) == 1
    assert len(s.live_steps()) == 50  # summary and what follows (2.1.39 preserves nothing)
    assert len({st.key for st in s.steps}) == 152 and all(st.key for st in s.steps)
    t = tmp_path / "proj" / src.name
    t.parent.mkdir()
    shutil.copyfile(src, t)
    status = cli("status", "--transcript", str(t), "--json", cwd=repo.path).json()["data"]
    assert (status["steps"]["total"], status["steps"]["since_compaction"]) == (152, 50)
    replay = cli("replay", "--transcript", str(t), "--policy", "base", "--json",
                     cwd=repo.path)
    assert replay.returncode == 0 and '"steps": 152' in replay.stdout
    fold = cli("fold", "session", "--transcript", str(t), "--session", "real", "--json",
                   cwd=repo.path)
    assert fold.returncode == 0 and fold.json()["data"]["written"] == 152
    again = cli("fold", "session", "--transcript", str(t), "--session", "real", "--json",
                    cwd=repo.path)
    assert again.returncode == 0 and again.json()["data"]["written"] == 0
    fork = cli("fork", "--transcript", str(t), "--json", cwd=repo.path)
    assert fork.returncode == 0, fork.stderr + fork.stdout
    data = fork.json()["data"]
    assert data["steps"] == 152 and data["summary_carried"] is True
    # The fork carries the live view (summary and what follows); the 102 steps before the
    # compaction stay in the original and its cold store (issue 24 item 3).
    forked = load_session(Path(data["fork"]))
    assert data["lines_left_out"] > 0
    assert len(forked.live_steps()) == 50 and len(forked.steps) == 50
