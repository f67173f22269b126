"""``contextfork fork --role``: a new session carrying only the role's slice, linked to the parent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork import layout
from contextfork.transcript import load_session
from tests.helpers import Repo, cli, count_parses
from tests.slice.parent import SESSION, parent_session


def test_fork_role_writes_one_message_holding_the_slice_and_links_the_parent(repo: Repo, tmp_path: Path) -> None:
    parent = parent_session(repo.path).write(tmp_path / f"{SESSION}.jsonl")
    before = parent.read_bytes()
    res = cli("fork", "--role", "tester", "--transcript", str(parent), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data = res.json()["data"]
    assert parent.read_bytes() == before
    forked = load_session(Path(data["fork"]))
    assert forked.session_id == data["session_id"] and len(forked.steps) == 1
    text = forked.steps[0].user_texts[0].text
    assert "for the tester role" in text and "$ pytest tests/test_invoice.py -q" in text
    assert all(f"step {b['step']} payload " in text for b in data["blocks"] if b.get("step"))
    record = json.loads(layout.fork_record(repo.path, data["session_id"]).read_text())
    assert record["forked_from"] == SESSION and record["role"] == "tester"


def test_fork_role_refuses_an_unknown_role_and_writes_nothing(repo: Repo, tmp_path: Path) -> None:
    parent = parent_session(repo.path).write(tmp_path / f"{SESSION}.jsonl")
    res = cli("fork", "--role", "astronaut", "--transcript", str(parent), cwd=repo.path)
    assert res.returncode == 2 and "unknown role 'astronaut'" in res.stderr
    assert not layout.fork_records_dir(repo.path).exists()
    assert not layout.packages_dir(repo.path).exists()  # nothing exported for a refused fork


def test_fork_role_parses_the_parent_transcript_once(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once, with its subagents, for the fork, its fold and the export's seed (issue 27)."""
    from contextfork.slice.fork import fork_role

    parent = parent_session(repo.path).write(tmp_path / f"{SESSION}.jsonl")
    reads = count_parses(monkeypatch, parent)
    fork_role(repo.path, parent, "tester")
    assert reads == [True], reads
