"""One "context tokens" figure everywhere, and a fresh fork's own footprint (issue 10 items 5, 6).

Context tokens = what the next model call would be sent: the harness's recorded prompt of the
latest call in the live window (source recorded), else the live window counted with o200k
(counted) or chars/4 (estimated). A fork's copied lines carry usage recorded for the original,
so until the harness records a call for the fork, its footprint is its own window, counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.harness import cc_fixture
from tests.helpers import Repo, cli, run_cli

BADGE = re.compile(r"\[ \S+ ([\d.]+k?) tokens(?: \((\w+)\))? \| Step (\d+)(?: · chain (\d+))? \| (\w+) \]")


def _statusline(transcript: Path, cwd: Path, tmp_path: Path) -> str:
    payload = json.dumps({"session_id": transcript.stem, "transcript_path": str(transcript),
                          "cwd": str(cwd), "workspace": {"current_dir": str(cwd)}})
    res = run_cli("statusline", input=payload, cwd=cwd,
                  env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert res.returncode == 0
    return res.stdout


def _status(transcript: Path, repo: Repo) -> dict[str, Any]:
    res = cli("status", "--transcript", str(transcript), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    data: dict[str, Any] = res.json()["data"]
    return data


def _fork(repo: Repo, transcript: Path) -> dict[str, Any]:
    res = cli("fork", "--transcript", str(transcript), "--json", "--min-chars", "500",
                  cwd=repo.path)
    assert res.returncode == 0, res.stderr + res.stdout
    data: dict[str, Any] = res.json()["data"]
    return data


def _grow(path: Path, context: int) -> None:
    """The harness appends a prompt and a call of the fork itself (recorded usage, no forkedFrom)."""
    last = json.loads(path.read_text().splitlines()[-1])
    base = {k: last[k] for k in ("cwd", "sessionId", "version", "gitBranch", "userType")}
    user = {**base, "type": "user", "isSidechain": False, "parentUuid": last["uuid"],
            "uuid": "own-u-1", "timestamp": "2026-02-11T10:00:00.000Z",
            "message": {"role": "user", "content": "now fix the config"}}
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 100,
             "cache_read_input_tokens": context - 105, "output_tokens": 20}
    asst = {**base, "type": "assistant", "isSidechain": False, "parentUuid": "own-u-1",
            "uuid": "own-a-1", "timestamp": "2026-02-11T10:00:05.000Z", "requestId": "req_own",
            "message": {"model": "claude-opus-4-6", "id": "msg_own", "type": "message",
                        "role": "assistant", "stop_reason": "end_turn", "usage": usage,
                        "content": [{"type": "text", "text": "Done."}]}}
    with open(path, "a", encoding="utf-8") as fh:
        for obj in (user, asst):
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")


def test_a_fresh_fork_shows_its_own_window_not_the_originals_usage(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path,
                         context_tokens=90_000)  # past the fork threshold: critical
    assert _status(t, repo)["risk"]["level"] == "critical"
    fork = Path(_fork(repo, t)["fork"])
    st = _status(fork, repo)
    assert st["tokens"]["source"] == "counted"
    # the fork's own messages plus what the harness adds to every call (system prompt and
    # tools), fitted on the first recorded call (45,000 in the fixture, with ~100 of history)
    assert st["tokens"]["includes_harness_overhead"] is True
    assert 44_000 < st["tokens"]["harness_overhead"] < 45_000
    assert st["tokens"]["harness_overhead"] < st["tokens"]["total"] < 50_000
    assert st["tokens"]["breakdown"]["system_prompt"] >= st["tokens"]["harness_overhead"]
    assert st["risk"]["level"] == "optimal"
    assert (st["steps"]["total"], st["steps"]["since_fork"]) == (3, 0)
    line = _statusline(fork, repo.path, tmp_path)
    m = BADGE.match(line)
    assert m, line
    assert m.group(2) == "counted" and m.group(5) == "Normal"
    assert (m.group(3), m.group(4)) == ("0", "3")
    assert m.group(1).endswith("k") and 44 < float(m.group(1)[:-1]) < 50  # the same figure
    # The harness records the fork's first call: from then on that is the footprint.
    _grow(fork, 21_000)
    st = _status(fork, repo)
    assert (st["tokens"]["source"], st["tokens"]["total"]) == ("recorded", 21_000)
    assert (st["steps"]["total"], st["steps"]["since_fork"]) == (4, 1)
    line = _statusline(fork, repo.path, tmp_path)
    assert line.startswith("[ 🟢 21k tokens | Step 1 · chain 4 | Normal ]"), line


def test_the_prompt_hook_does_not_warn_a_fresh_fork_with_the_originals_usage(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path,
                         context_tokens=90_000)
    data = _fork(repo, t)
    payload = {"session_id": data["session_id"], "transcript_path": data["fork"],
               "cwd": str(repo.path), "hook_event_name": "UserPromptSubmit",
               "prompt": "what next?"}
    res = run_cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0 and "fork threshold" not in res.stdout


def test_every_command_reports_the_same_context_tokens(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = cc_fixture.write(repo.path / "sessions" / f"{cc_fixture.SESSION}.jsonl", repo.path,
                         context_tokens=12_345)
    st = _status(t, repo)
    assert (st["tokens"]["total"], st["tokens"]["source"]) == (12_345, "recorded")
    assert "12.3k tokens" in _statusline(t, repo.path, tmp_path)
    rendered = cli("render", "--transcript", str(t), "--json", cwd=repo.path)
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.json()["data"]["context_tokens"] == {
        "total": 12_345, "source": "recorded", "includes_harness_overhead": True}
    assert "rendered prompt" in cli("render", "--transcript", str(t), cwd=repo.path).stdout
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    from contextfork.harness.mcp.server import get_context_status

    mcp = get_context_status(workspace=str(repo.path), transcript_path=str(t))
    assert mcp["data"]["tokens"]["total"] == 12_345
    data = _fork(repo, t)
    before, after = data["context_tokens_before"], data["context_tokens_after"]
    assert before == {"total": 12_345, "source": "recorded", "includes_harness_overhead": True}
    assert after["source"] == "counted" and after["includes_harness_overhead"] is True
    fork_status = _status(Path(data["fork"]), repo)["tokens"]
    assert after == {"total": fork_status["total"], "source": fork_status["source"],
                     "includes_harness_overhead": fork_status["includes_harness_overhead"]}
    assert "history tokens (counted)" in cli(
        "fork", "--transcript", str(t), "--min-chars", "500", cwd=repo.path
    ).stdout


def test_a_verbatim_copy_keeps_the_recorded_usage_it_copied(repo: Repo, tmp_path: Path) -> None:
    """Claude Code's own --fork-session copies lines unchanged (forkedFrom on each): the same
    window, so the copied usage is still what the next call sends; only steps restart."""
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path,
                         context_tokens=30_000)
    copy = tmp_path / "src" / "88888888-2222-4333-8444-555555555555.jsonl"
    out = []
    for raw in t.read_text().splitlines():
        obj = json.loads(raw)
        obj["forkedFrom"] = {"sessionId": cc_fixture.SESSION, "messageUuid": obj["uuid"]}
        obj["sessionId"] = copy.stem
        out.append(json.dumps(obj, separators=(",", ":")))
    copy.write_text("\n".join(out) + "\n")
    st = _status(copy, repo)
    assert (st["tokens"]["total"], st["tokens"]["source"]) == (30_000, "recorded")
    assert (st["steps"]["total"], st["steps"]["since_fork"]) == (3, 0)
    assert _statusline(copy, repo.path, tmp_path).startswith(
        "[ 🟢 30k tokens | Step 0 · chain 3 | Normal ]"
    )
