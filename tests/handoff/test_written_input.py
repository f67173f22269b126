"""A handoff the model writes (``export --handoff FILE``): the simplest valid input works."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Repo, cli


def _latest(repo: Repo) -> Path:
    base = repo.path / ".contextfork" / "packages"
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))[-1]


def test_export_handoff_accepts_decision_evidence_without_the_optional_note(repo: Repo) -> None:
    written = {
        "settled_decisions": [
            {"decision": "keep the parser", "evidence": [{"kind": "file", "ref": "README.md"}]}
        ],
        "failed_approaches": [
            {"approach": "pin v2", "barred_action": "pin v2 again",
             "evidence": [{"kind": "file", "ref": "src/app.py"}]}
        ],
    }  # fmt: skip
    (repo.path / "h.json").write_text(json.dumps(written))
    res = cli("export", "--handoff", "h.json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    summary = (_latest(repo) / "handoff_summary.md").read_text()
    assert "Evidence (file): `README.md`" in summary
    assert "keep the parser" in summary
