"""Hook input is untrusted: a session id must never steer a path out of the repo's state dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import cc_fixture
from tests.helpers import Repo, run_cli


@pytest.mark.parametrize("sid", ["../../../escaped", "/ABS/escaped", "ok/../../../escaped"])
def test_a_traversing_session_id_writes_nothing_outside_the_repo(
    repo: Repo, tmp_path: Path, sid: str
) -> None:
    t = tmp_path / "proj" / "t.jsonl"
    cc_fixture.write(t, repo.path, context_tokens=61_000)
    target = tmp_path / "abs"
    target.mkdir()
    payload = {
        "session_id": sid.replace("/ABS", str(target)),
        "transcript_path": str(t),
        "cwd": str(repo.path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "",
    }
    before = sorted(p.name for p in tmp_path.rglob("*") if repo.path not in p.parents)
    res = run_cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0
    assert res.stderr == ""
    if res.stdout:
        json.loads(res.stdout)
    after = sorted(p.name for p in tmp_path.rglob("*") if repo.path not in p.parents)
    assert after == before
    assert not (repo.path.parent / "escaped.json").exists()
    assert not list(target.iterdir())
