"""Folding a real transcript (needs ../shared; skipped in a user's clone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfork.cold import api
from tests.helpers import Repo, cli


def test_fold_session_stores_every_step_losslessly(transcripts_dir: Path, tmp_path: Path) -> None:
    from contextfork.transcript import load_session

    path = transcripts_dir / "claude-code" / "tool_heavy.jsonl"
    store = tmp_path / "cold" / "cc"
    res = api.fold_session(path, store_dir=store)
    sess = load_session(path)
    assert res.data["steps"] == len(sess.steps) == res.data["written"]
    for step in sess.steps[:10]:
        node = api.show(step.index, store_dir=store).data["node"]
        assert node["content"].encode("utf-8") == step.raw_bytes() or node["redactions"]
        assert node["summary"].startswith(f"Step {step.index}:")
    assert api.validate(store_dir=store).exit_code == 0
    again = api.fold_session(path, store_dir=store)
    assert again.data["written"] == 0 and again.data["unchanged"] == len(sess.steps)


def test_fold_session_cli_then_scan_finds_a_file_the_session_touched(transcripts_dir: Path, repo: Repo) -> None:
    path = transcripts_dir / "claude-code" / "short.jsonl"
    r = cli("fold", "session", "--transcript", str(path), "--json", cwd=repo.path)
    assert r.returncode == 0, r.stderr
    assert r.json()["data"]["steps"] >= 1
    r = cli("fold", "status", "--json", cwd=repo.path)
    assert r.json()["data"]["nodes"] >= 1
    r = cli("fold", "session", "--transcript", str(repo.path / "nope.jsonl"), cwd=repo.path)
    assert r.returncode == 4


def test_fold_session_loads_the_vocabulary_between_the_transcripts_two_passes(
    transcripts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own load gets ``tokens.warm`` as ``between`` (issue 27: 9 MB less peak at 55 MB)."""
    from contextfork import tokens
    from contextfork.transcript import claude_code

    path = tmp_path / "s.jsonl"  # a file of its own: no session of it is held yet
    path.write_bytes((transcripts_dir / "claude-code" / "short.jsonl").read_bytes())
    calls: list[str] = []
    real_warm, real_build = tokens.warm, claude_code.build_prepared

    def warm() -> None:
        calls.append("warm")
        real_warm()

    def build(*a: Any, **k: Any) -> Any:
        calls.append("steps")
        return real_build(*a, **k)

    monkeypatch.setattr(tokens, "warm", warm)
    monkeypatch.setattr(claude_code, "build_prepared", build)
    api.fold_session(path, store_dir=tmp_path / "cold" / "cc")
    assert calls == ["warm", "steps"]


def _nodes(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store / "cold_nodes").glob("*.json"))}


def test_fold_session_empties_folded_steps_yet_writes_the_same_nodes(
    transcripts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own session's blocks go once each node is parked (issue 27); a node built again
    under the lock (here: every one) reads its step from a fresh parse. The nodes are the bytes
    a fold of a held, untouched session writes."""
    from contextfork.cold import keyed
    from contextfork.transcript import load_session

    path = tmp_path / "s.jsonl"
    path.write_bytes((transcripts_dir / "claude-code" / "tool_heavy.jsonl").read_bytes())
    held = load_session(path, include_subagents=False)
    api.fold_session(path, store_dir=tmp_path / "held" / "s", loaded=held)
    assert all(s.blocks for s in held.steps[:3])  # a caller's session is left as it was
    api.fold_session(path, store_dir=tmp_path / "own" / "s")
    real_plan = keyed._plan
    rebuilt: list[int] = []

    def plan(conn: Any, layout: Any, steps: Any, build: Any, cache: dict[Any, Any], *rest: Any) -> Any:
        if rest[-1]:  # under the lock: build every node again
            cache.clear()
            rebuilt.append(len(steps))
        return real_plan(conn, layout, steps, build, cache, *rest)

    monkeypatch.setattr(keyed, "_plan", plan)
    api.fold_session(path, store_dir=tmp_path / "again" / "s")
    assert rebuilt == [len(held.steps)]
    want = _nodes(tmp_path / "held" / "s")
    assert len(want) == len(held.steps)
    for name in ("own", "again"):
        got = _nodes(tmp_path / name / "s")
        assert got.keys() == want.keys()
        assert got == want, name
