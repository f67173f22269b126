"""The project folder name Claude Code gives a directory (values observed with Claude Code 2.1.328;
tests/e2e/test_claude_session.py checks the rule against the real client)."""

from __future__ import annotations

from pathlib import Path

from contextfork.transcript.locate import project_slug

OBSERVED_LONG = "/tmp/e2exnri0bu0w/L" + "x" * 120 + "/" + "y" * 100


def test_project_slug_replaces_every_non_alphanumeric_character() -> None:
    assert project_slug(Path("/tmp/e2exnri0bu0w/my proj.v2_ü-x")) == "-tmp-e2exnri0bu0w-my-proj-v2---x"


def test_project_slug_of_a_long_path_is_cut_at_200_with_the_paths_hash() -> None:
    slug = project_slug(Path(OBSERVED_LONG))
    assert slug == (
        "-tmp-e2exnri0bu0w-L" + "x" * 120 + "-" + "y" * 60 + "-ve3hiy"
    ), "Claude Code named this directory's folder ...yyy-ve3hiy"
    assert len(slug) == 207
