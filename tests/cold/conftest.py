from __future__ import annotations

from pathlib import Path

import pytest

from contextfork.cold.scenario import build_reference_scenario
from tests.cold.sharekit import Machines, machines


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty cold store directory for session 's1' (created on first fold)."""
    return tmp_path / "repo" / ".contextfork" / "cold" / "s1"


@pytest.fixture
def scenario_store(store: Path) -> Path:
    build_reference_scenario(store)
    return store


@pytest.fixture
def two(tmp_path: Path) -> Machines:
    """Two clones of one bare remote (the shared cold store tests)."""
    return machines(tmp_path)
