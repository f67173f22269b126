"""Every command that creates ``.contextfork/`` keeps it out of ``git status`` (issue 13 #14).

The first write into a repo may come from any entry point (render's cold store, a fold, an
export, a policy file, a hook install); whichever comes first must add ``/.contextfork/`` to
``.git/info/exclude``, so the user never sees (or commits) contextfork's state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import cc_fixture
from tests.helpers import make_repo, run_cli

ENTRY_POINTS = {
    "render-repo": ("render", "--transcript", "{t}", "--repo", "{repo}", "--policy", "refold"),
    "fold-session": ("fold", "session", "--transcript", "{t}", "--repo", "{repo}"),
    "fold-add": ("fold", "add", "1", "a step", "--file", "{t}", "--repo", "{repo}"),
    "export": ("export", "--goal", "g", "--repo", "{repo}"),
    "policy-init": ("policy", "init", "--repo", "{repo}"),
    "fork": ("fork", "--transcript", "{t}", "--repo", "{repo}"),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_first_write_into_repo_excludes_state_dir(name: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "t.jsonl", repo.path)
    args = [a.format(t=transcript, repo=repo.path) for a in ENTRY_POINTS[name]]
    res = run_cli(*args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (repo.path / ".contextfork").is_dir(), "the command wrote no state; test is void"
    exclude = (repo.path / ".git" / "info" / "exclude").read_text()
    assert "/.contextfork/" in exclude.splitlines()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
