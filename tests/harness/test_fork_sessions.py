"""Fork edge cases (issue 10 item 7): fork of a fork, where the fork lands, nothing to save."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from contextfork.transcript import load_session
from contextfork.transcript.locate import project_slug
from tests.harness import cc_fixture
from tests.helpers import Repo, run_cli


def _fork(repo: Repo, transcript: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return run_cli("fork", "--transcript", str(transcript), "--json", *args, cwd=repo.path,
                   env=env)


def _conversation(path: Path) -> list[tuple[Any, ...]]:
    s = load_session(path)
    return [
        (tuple(b.text for b in st.blocks if b.type == "text"),
         tuple((c.id, c.name) for c in st.tool_calls),
         tuple(r.call_id for r in st.tool_results))
        for st in s.steps
    ]


def _append_turn(path: Path, cwd: Path) -> None:
    """What Claude Code appends when the user resumes the fork: a call and a large result."""
    lines = [json.loads(raw) for raw in path.read_text().splitlines()]
    sid, parent = lines[-1]["sessionId"], lines[-1]["uuid"]
    base = {"isSidechain": False, "userType": "external", "cwd": str(cwd), "sessionId": sid,
            "version": "2.1.328", "gitBranch": "main", "timestamp": "2026-02-11T09:00:00.000Z"}
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 100,
             "cache_read_input_tokens": 9000, "output_tokens": 30}
    call = {**base, "type": "assistant", "parentUuid": parent, "uuid": "a-new-1",
            "requestId": "req_new", "message": {
                "model": "claude-opus-4-6", "id": "msg_new", "type": "message",
                "role": "assistant", "stop_reason": None, "usage": usage,
                "content": [{"type": "tool_use", "id": "toolu_new", "name": "Bash",
                             "input": {"command": "cat big.log"}}]}}
    big = "\n".join(f"log line {i}: connection reset by peer" for i in range(200))
    result = {**base, "type": "user", "parentUuid": "a-new-1", "uuid": "u-new-1",
              "sourceToolAssistantUUID": "a-new-1", "toolUseResult": {"stdout": big},
              "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "toolu_new", "content": big}]}}
    with open(path, "a", encoding="utf-8") as fh:
        for obj in (call, result):
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")


def test_a_fork_of_a_fork_works(repo: Repo, tmp_path: Path) -> None:
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    first = _fork(repo, t, "--min-chars", "500")
    assert first.returncode == 0, first.stderr + first.stdout
    f1 = Path(first.json()["data"]["fork"])
    # the fork grows: the user resumed it and the harness appended a turn (usage of its own)
    _append_turn(f1, repo.path)
    second = _fork(repo, f1, "--min-chars", "500")
    assert second.returncode == 0, second.stderr + second.stdout
    data = second.json()["data"]
    f2 = Path(data["fork"])
    assert f2.exists() and data["original_session_id"] == first.json()["data"]["session_id"]
    assert _conversation(f2) == _conversation(f1)
    assert data["stubbed"] == 1  # only the new result; the first fork's stub is kept as it is
    record = json.loads(
        (repo.path / ".contextfork" / "harness" / "forks" / f"{data['session_id']}.json")
        .read_text()
    )
    assert record["forked_from"] == first.json()["data"]["session_id"]


def test_the_fork_lands_in_the_harness_session_directory_of_the_repo(
    repo: Repo, tmp_path: Path
) -> None:
    cfg = tmp_path / "my-claude"
    t = cc_fixture.write(tmp_path / "downloads" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    res = _fork(repo, t, "--min-chars", "500", env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert res.returncode == 0, res.stderr + res.stdout
    data = res.json()["data"]
    slug = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(repo.path))
    expected = cfg / "projects" / slug / f"{data['session_id']}.jsonl"
    assert Path(data["fork"]) == expected and expected.is_file()
    assert not (t.parent / f"{data['session_id']}.jsonl").exists()
    assert data["resume_command"] == f"claude --resume {data['session_id']}"


def test_the_project_slug_matches_claude_code_for_long_and_non_ascii_paths() -> None:
    # Observed with the real Claude Code 2.1.328 (CLAUDE_CONFIG_DIR=… claude -p in this dir):
    # UTF-16 code units each become "-", and past 200 chars a base-36 hash of the path is added.
    path = "/tmp/slugt/" + "a" * 120 + "/" + "é" * 5 + "😀" + "b" * 100
    assert project_slug(Path(path)) == (
        "-tmp-slugt-" + "a" * 120 + "-" * 8 + "b" * 61 + "-pqugju"
    )
    assert project_slug(Path("/tmp/x.y_z")) == "-tmp-x-y-z"


def test_a_fork_with_nothing_to_save_exits_0_and_writes_nothing(
    repo: Repo, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg"
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    res = _fork(repo, t, "--min-chars", "1000000", env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert res.returncode == 0, res.stderr + res.stdout
    data = res.json()["data"]
    assert data["fork"] is None and data["session_id"] is None
    assert "no tool result of at least" in data["nothing_to_save"]
    assert not list(cfg.glob("projects/*/*.jsonl"))
    assert not (repo.path / ".contextfork" / "harness" / "forks").exists()
    plain = run_cli("fork", "--transcript", str(t), "--min-chars", "1000000", cwd=repo.path,
                    env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert plain.returncode == 0 and "nothing to save" in plain.stdout.lower()
    assert "claude --resume" not in plain.stdout


def test_a_fork_that_would_not_be_smaller_is_not_written(repo: Repo, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    t = cc_fixture.write(tmp_path / "src" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    small = "x" * 400  # just over --min-chars: its stub plus forkedFrom on every line cost more
    lines = [json.loads(raw) for raw in t.read_text().splitlines()]
    for obj in lines:
        content = obj.get("message", {}).get("content")
        if isinstance(content, list) and content and content[0].get("tool_use_id") == "toolu_01":
            content[0]["content"] = small
            obj["toolUseResult"] = {"stdout": small, "stderr": ""}
    t.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in lines))
    res = _fork(repo, t, "--min-chars", "300", env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert res.returncode == 0, res.stderr + res.stdout
    data = res.json()["data"]
    assert data["fork"] is None and "would not be smaller" in data["nothing_to_save"]
    assert not list(cfg.glob("projects/*/*.jsonl"))
    assert not (repo.path / ".contextfork" / "harness" / "forks").exists()
