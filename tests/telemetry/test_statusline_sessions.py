"""The statusline shows the session it is asked about, never another one (issue 10 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.transcript.locate import project_dir
from tests.helpers import make_repo, run_cli
from tests.telemetry.test_status import small_session


def _payload(transcript: Path, cwd: Path, sid: str) -> str:
    return json.dumps({
        "session_id": sid, "transcript_path": str(transcript), "cwd": str(cwd),
        "model": {"id": "claude-opus-4-6", "display_name": "Opus 4.6"},
        "workspace": {"current_dir": str(cwd), "project_dir": str(cwd)},
    })


def test_a_new_session_without_a_transcript_shows_a_neutral_badge(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    repo = make_repo(tmp_path / "repo")
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    folder = cfg / "projects" / project_dir(repo.path).name
    folder.mkdir(parents=True)
    small_session(folder / "old-session.jsonl")  # an earlier session of the same directory
    # Before its first prompt the new session's transcript does not exist yet.
    new = folder / "new-session.jsonl"
    res = run_cli("statusline", input=_payload(new, repo.path, "new-session"), env=env,
                  cwd=repo.path)
    assert res.returncode == 0
    assert "Step 3" not in res.stdout and "34.2k" not in res.stdout
    assert res.stdout.startswith("[ ⚪ new session | Step 0 ]")
    assert "Opus 4.6" in res.stdout
    # Without transcript_path, the session id still names the (missing) file: same badge.
    bare = json.dumps({"session_id": "new-session", "cwd": str(repo.path),
                       "workspace": {"current_dir": str(repo.path)}})
    res = run_cli("statusline", input=bare, env=env, cwd=repo.path)
    assert res.stdout.startswith("[ ⚪ new session | Step 0 ]")
    # Once it exists, its own numbers show.
    small_session(new, context=12_000)
    res = run_cli("statusline", input=_payload(new, repo.path, "new-session"), env=env,
                  cwd=repo.path)
    assert res.stdout.startswith("[ 🟢 12k tokens | Step 3 | Normal ]")
