from __future__ import annotations

from pathlib import Path

from contextfork.cold import api
from contextfork.curate.api import run_verb
from tests.helpers import Repo

TEXT = "Configured the redis cache: ttl_seconds = 300 in settings/cache.py (CACHE_BACKEND redis)."


def _store(repo: Repo) -> None:
    for step in (1, 2, 3):
        api.fold_step(step, f"redis cache ttl_seconds step {step}", TEXT, repo=repo.path,
                      session="p1")


def _picked(repo: Repo) -> list[int]:
    res = api.page_in("what ttl_seconds does the redis cache use?", repo=repo.path, session="p1")
    return [int(s["step_id"]) for s in res.data["selected"]]


def test_page_in_prefers_a_pinned_step_on_a_tie(repo: Repo) -> None:
    _store(repo)
    assert _picked(repo) == [3]  # a tie goes to the newest step
    run_verb(repo.path, "p1", "pin", {"step": 1})
    assert _picked(repo) == [1]  # ... unless the agent pinned one
    run_verb(repo.path, "p1", "unpin", {"step": 1})
    assert _picked(repo) == [3]


def test_a_pin_does_not_beat_better_coverage(repo: Repo, tmp_path: Path) -> None:
    _store(repo)
    api.fold_step(4, "unrelated: the login form", "login form markup", repo=repo.path,
                  session="p1")
    run_verb(repo.path, "p1", "pin", {"step": 4})
    assert _picked(repo) == [3]


def test_a_scan_without_decisions_never_loads_the_curation_module(repo: Repo) -> None:
    """The prompt hook scans on every prompt; most stores hold no decision."""
    import subprocess
    import sys

    _store(repo)
    code = ("import sys; from contextfork.cold import api; "
            "api.page_in('what ttl_seconds does the redis cache use?', repo=sys.argv[1], session='p1'); "
            "print('contextfork.cold.decisions' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, str(repo.path)], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    assert out == "False"
    run_verb(repo.path, "p1", "pin", {"step": 1})
    assert _picked(repo) == [1]  # with a decision, it is read
