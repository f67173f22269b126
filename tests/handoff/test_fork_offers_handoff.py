"""``fork`` offers ``/handoff`` when nobody wrote the package's judgement parts."""

from __future__ import annotations

from pathlib import Path

from tests.harness import cc_fixture
from tests.helpers import Repo, cli


def test_fork_offers_handoff_when_the_goal_and_next_action_are_not_recorded(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    res = cli("fork", "--transcript", str(t), "--min-chars", "500", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert "active_goal, settled_decisions, open_risks, next_action not recorded" in res.stdout
    assert f"`claude --resume {cc_fixture.SESSION}`, then `/handoff`" in res.stdout
