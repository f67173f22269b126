"""``export --transcript auto`` takes the session that did the work here, says which and why,
and refuses to guess between two sessions that both worked here at the same time."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from contextfork.transcript.locate import project_dir
from tests.harness import cc_fixture
from tests.helpers import Repo, cli
from tests.transcript.builders import CC, write_jsonl

HELLO = "22222222-2222-4333-8444-555555555555"


def _hello(repo: Repo, sid: str = HELLO) -> Path:
    b = CC(session_id=sid, cwd=str(repo.path))
    lines = [b.user("hello"), b.assistant("m1", [{"type": "text", "text": "Hi!"}])]
    return write_jsonl(project_dir(repo.path) / f"{sid}.jsonl", lines)


def _worker(repo: Repo, sid: str, when: float) -> Path:
    path = cc_fixture.write(project_dir(repo.path) / f"{sid}.jsonl", repo.path, session=sid)
    b = CC(session_id=sid, cwd=str(repo.path))
    edit = {"type": "tool_use", "id": "toolu_e", "name": "Edit",
            "input": {"file_path": str(repo.path / "src" / "app.py"), "old_string": "1",
                      "new_string": "2"}}  # fmt: skip
    last = json.loads(path.read_text().splitlines()[-1])["uuid"]  # continue the chain
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(b.assistant("m9", [edit], parent=last)) + "\n")
    os.utime(path, (when, when))
    return path


def test_transcript_auto_skips_a_newer_hello_and_says_which_session_and_why(repo: Repo) -> None:
    now = time.time()
    work = _worker(repo, cc_fixture.SESSION, now - 3600)
    hello = _hello(repo)
    os.utime(hello, (now, now))
    res = cli("export", "--transcript", "auto", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data = res.json()["data"]
    choice = data["transcript_choice"]
    assert choice["path"] == str(work)
    assert "trivial" in choice["why"]
    assert [s["path"] for s in choice["skipped"]] == [str(hello)]
    pkg = Path(data["path"])
    meta = json.loads((pkg / "session_metadata.json").read_text())
    assert meta["transcript"]["path"] == str(work)
    handoff = json.loads((pkg / "handoff.json").read_text())
    # the do-not-retry list of the session that did the work made it into the package
    assert any("pytest" in f["approach"] for f in handoff["failed_approaches"])
    human = cli("export", "--transcript", "auto", cwd=repo.path)
    assert f"transcript: {work}" in human.stdout


def test_transcript_auto_refuses_to_guess_between_two_sessions_working_here_together(
    repo: Repo,
) -> None:
    now = time.time()
    a = _worker(repo, cc_fixture.SESSION, now - 60)
    b = _worker(repo, "33333333-2222-4333-8444-555555555555", now)
    res = cli("export", "--transcript", "auto", cwd=repo.path)
    assert res.returncode == 2
    assert str(a) in res.stderr and str(b) in res.stderr and "--transcript PATH" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
