from __future__ import annotations

import os
import re
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

# What starts a process that may be a contextfork command (directly, or through a git hook).
_SPAWNS = re.compile(r"run_cli\(|subprocess|sys\.executable|Popen|commit_all|\"commit\"")
# Modules whose processes are never contextfork commands a server could answer (paths under
# tests/): the wheel's commands run from a fresh venv (another build, so never served); the
# others start a child Python of their own (``-c``: library calls, memory or lock probes),
# mkdocs or ccusage. A test of a served module that starts none is marked ``cold_only``.
_NEVER_SERVED = frozenset({
    "test_wheel.py", "test_docs.py", "cold/test_fold_memory.py", "transcript/test_raw_spans.py",
    "transcript/test_outputs_in_file.py", "harness/test_fork_memory.py",
    "curate/test_pagein.py", "curate/test_verbs.py", "package/test_jsoncheck.py",
    "telemetry/test_status_plain.py", "telemetry/test_billing.py", "cold/test_cli.py",
    "cold/test_conformance.py", "cold/test_lock.py", "cold/test_concurrency.py",
})
_TESTS = Path(__file__).resolve().parent


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """The served pass (CONTEXTFORK_TEST_SERVER=on) is there to check that a served command is
    the cold one; a test module that starts no process sends nothing through the server and
    has run already in the cold pass, so that pass leaves it out."""
    if os.environ.get("CONTEXTFORK_TEST_SERVER") != "on":
        return None
    name = collection_path.name
    if not (name.startswith("test_") and name.endswith(".py")):
        return None
    if collection_path.resolve().relative_to(_TESTS).as_posix() in _NEVER_SERVED:
        return True
    text = collection_path.read_text(encoding="utf-8", errors="replace")
    return None if _SPAWNS.search(text) else True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The served pass leaves out the tests marked ``cold_only`` (they start no command)."""
    if os.environ.get("CONTEXTFORK_TEST_SERVER") != "on":
        return
    dropped = [i for i in items if i.get_closest_marker("cold_only")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if not i.get_closest_marker("cold_only")]


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
