from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.helpers import TRANSCRIPTS, Repo, make_repo

# Commands run as subprocesses are run cold unless CONTEXTFORK_TEST_SERVER=on: then the whole
# suite goes through one warm command server (its own socket directory), as a user's would.
if os.environ.get("CONTEXTFORK_TEST_SERVER") == "on":
    os.environ.setdefault("CONTEXTFORK_SERVER_DIR", tempfile.mkdtemp(prefix="cf-test-server-"))
    os.environ["CONTEXTFORK_SERVER"] = "on"  # the server is off unless asked for
else:
    os.environ["CONTEXTFORK_SERVER"] = "off"


@pytest.fixture(autouse=True)
def _private_claude_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own Claude Code config dir: forks land in its projects/ folder and
    session lookups never see the real ~/.claude (a test that needs another sets env itself)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A real git repository with one commit (README.md, src/app.py)."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def empty_repo(tmp_path: Path) -> Repo:
    """A real git repository with an unborn HEAD (no commits)."""
    return make_repo(tmp_path / "repo", commit=False)


@pytest.fixture
def transcripts_dir() -> Path:
    """The shared real transcripts; tests using them skip where ../shared is absent."""
    if not TRANSCRIPTS.is_dir():
        pytest.skip("../shared/data/transcripts is absent (a user's clone has no ../shared)")
    return TRANSCRIPTS
