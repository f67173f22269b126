from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import cc_fixture
from tests.helpers import Repo, cli, make_repo
from tests.view.browsing import start_browser


@dataclass
class Viewed:
    repo: Repo
    transcript: Path
    out: Path
    session: str

    def node(self, step: int) -> Path:
        return (self.repo.path / ".contextfork" / "cold" / self.session / "cold_nodes"
                / f"step_{step:06d}.json")  # fmt: skip

    def build(self, *extra: str) -> dict[str, object]:
        res = cli("view", "--transcript", str(self.transcript), "--out", str(self.out),
                      "--json", *extra, cwd=self.repo.path)  # fmt: skip
        assert res.returncode == 0, res.stderr
        data: dict[str, object] = res.json()["data"]
        return data

    def html(self) -> str:
        return "".join(p.read_text(encoding="utf-8") for p in sorted(self.out.glob("*.html")))


@pytest.fixture
def viewed(tmp_path: Path) -> Viewed:
    """A repo with a folded Claude Code session and one exported package."""
    repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "session.jsonl", repo.path)
    res = cli("fold", "session", "--transcript", str(transcript), "--session",
                  cc_fixture.SESSION, "--json", cwd=repo.path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    repo.write("src/app.py", "def main():\n    return 42\n")
    assert cli("export", "--goal", "show the inspector", cwd=repo.path).returncode == 0
    v = Viewed(repo, transcript, tmp_path / "site", cc_fixture.SESSION)
    json.dumps(v.build())
    return v


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for every browser test of a worker."""
    yield from start_browser()
