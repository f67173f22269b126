"""Quick start C keeps the brief: ``resume --apply`` in a shell does not use it up.

The brief is consumed when a session really receives it (the SessionStart hook that injects
it), so the next session started in the clone where the package was applied gets it, once.
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import Repo, cli, clones_of_one_remote, run_cli


def _start(repo: Repo, sid: str) -> str:
    payload: dict[str, Any] = {
        "session_id": sid, "cwd": str(repo.path), "hook_event_name": "SessionStart",
        "source": "startup", "transcript_path": str(repo.path / "nowhere" / f"{sid}.jsonl"),
    }  # fmt: skip
    res = run_cli("hook", "session-start", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    if not res.stdout:
        return ""
    return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"])


def _share(tmp_path: Any, *export_args: str) -> tuple[Repo, str]:
    _remote, a, b = clones_of_one_remote(tmp_path)
    a.write("src/app.py", "x = 2\n")
    out = cli("export", "--goal", "Ship the port fix", *export_args, "--json", cwd=a.path)
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    assert cli("push", "origin", cwd=a.path).returncode == 0
    assert cli("pull", cwd=b.path).returncode == 0
    res = cli("resume", pid, "--apply", "--json", cwd=b.path)
    assert res.returncode == 0, res.stdout + res.stderr
    return b, pid


def test_resume_apply_in_a_shell_leaves_the_brief_for_the_next_session(tmp_path: Any) -> None:
    b, pid = _share(tmp_path)
    ctx = _start(b, "first-session-in-b")
    assert pid in ctx and "Ship the port fix" in ctx
    assert "already resumed" not in ctx  # the shell's apply is not a session that read it
    assert _start(b, "second-session-in-b") == ""  # received once: now it is consumed


def test_a_pulled_pre_compact_package_applied_here_is_offered_to_the_next_session(
    tmp_path: Any,
) -> None:
    # Claimed by the session that compacted (on the other machine, which never starts here).
    b, pid = _share(tmp_path, "--trigger", "pre-compact", "--session", "session-on-machine-a")
    ctx = _start(b, "first-session-in-b")
    assert pid in ctx and "resume --apply" in ctx
    assert _start(b, "second-session-in-b") == ""
