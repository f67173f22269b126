"""``fold push|pull``: a cold store folded on one machine pages in byte-exact on another.

Two real clones of a bare remote (two machines); git moves the nodes as objects under
``refs/contextfork/cold/<session>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.cold import share
from contextfork.cold.share import REF_PREFIX, tracking_ref
from tests.cold.sharekit import (
    QUESTION,
    SESSION,
    Machines,
    fold_scenario,
    indexed,
    node_file,
    node_of,
    state_files,
    store,
)
from tests.helpers import cli, git


def _ok(*args: str, cwd: Path) -> dict[str, Any]:
    res = cli(*args, "--json", cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    data: dict[str, Any] = res.json()["data"]
    return data


def _paged(repo: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What a new turn pages in for the reference question, and each step hydrated alone."""
    scan = _ok("fold", "scan", QUESTION, "--session", SESSION, cwd=repo)
    shown = {k: scan[k] for k in ("terms", "selected", "context", "tokens")}
    if scan["pulled"]:  # each block of a pulled session carries the label; the rest is the same
        shown["context"] = scan["context"].replace(scan["pulled"] + "\n", "")
    hydrated = []
    for step in (7, 5, 4, 1):
        cli("fold", "evict", str(step), "--session", SESSION, cwd=repo)
        h = _ok("fold", "hydrate", str(step), "--session", SESSION, cwd=repo)
        hydrated.append({k: v for k, v in h.items() if k not in ("turn",)})
    return shown, hydrated


def test_fold_in_a_push_pull_in_b_pages_in_the_same_verified_bytes(two: Machines) -> None:
    fold_scenario(two.a)
    pushed = _ok("fold", "push", "origin", cwd=two.a.path)
    commit = pushed["sessions"][SESSION]["commit"]
    assert git(two.remote, "rev-parse", f"{REF_PREFIX}{SESSION}") == commit
    assert not store(two.b).exists()
    pulled = _ok("fold", "pull", "origin", cwd=two.b.path)
    assert pulled["sessions"][SESSION]["indexed"] == 8
    for step in range(1, 9):
        assert node_file(two.b, step).read_bytes() == node_file(two.a, step).read_bytes()
    assert indexed(two.b) == indexed(two.a)
    view = "recall_index.json"  # the IPCF view: same nodes, same bytes
    assert (store(two.b) / view).read_bytes() == (store(two.a) / view).read_bytes()
    _ok("fold", "validate", "--session", SESSION, cwd=two.b.path)
    scan_a, hydrate_a = _paged(two.a.path)
    scan_b, hydrate_b = _paged(two.b.path)
    labelled = _ok("fold", "scan", QUESTION, "--session", SESSION, cwd=two.b.path)["context"]
    assert labelled.count("[pulled from origin (UNSIGNED, commit ") == 3
    assert [s["step_id"] for s in scan_b["selected"]] == [7, 5, 4]
    assert scan_b == scan_a
    assert hydrate_b == hydrate_a
    for h in hydrate_b:
        assert h["verified"] is True
        assert h["payload_sha256"] == node_of(two.a, h["step_id"])["payload_sha256"]
    assert two.b.git("rev-parse", tracking_ref("origin", SESSION)) == commit
    assert two.b.git("status", "--porcelain") == ""  # the pulled store stays out of git status


def test_the_tree_is_a_function_of_the_nodes_and_each_push_is_one_commit_on_the_last(
    two: Machines,
) -> None:
    fold_scenario(two.a)
    first = _ok("fold", "push", cwd=two.a.path)["sessions"][SESSION]
    again = _ok("fold", "push", cwd=two.a.path)["sessions"][SESSION]
    assert again["commit"] == first["commit"] and again["new_commit"] is False
    assert again["verified"] == 0  # nothing re-read: every blob is in the commit pushed before
    tree_a = two.a.git("rev-parse", f"{first['commit']}^{{tree}}")
    assert two.a.git("ls-tree", "--name-only", tree_a) == "cold_nodes"
    names = two.a.git("ls-tree", "--name-only", f"{tree_a}:cold_nodes").splitlines()
    assert names == [f"step_{i:06d}.json" for i in range(1, 9)]
    # The same nodes folded in another clone give the same tree, byte for byte.
    fold_scenario(two.b)
    out = share.prepare(two.b.path, "origin", SESSION)
    assert out is not None and two.b.git("rev-parse", f"{out.commit}^{{tree}}") == tree_a
    # A new fold batch is one commit whose parent is the previous one.
    cli(
        "fold",
        "add",
        "9",
        "Tagged release 2.0",
        "--session",
        SESSION,
        input="$ git tag v2.0\n",
        cwd=two.a.path,
    )
    second = _ok("fold", "push", cwd=two.a.path)["sessions"][SESSION]
    assert second["new_commit"] is True and second["verified"] == 1
    assert two.a.git("rev-parse", f"{second['commit']}^@") == first["commit"]


def test_pull_twice_is_idempotent(two: Machines) -> None:
    fold_scenario(two.a)
    _ok("fold", "push", cwd=two.a.path)
    _ok("fold", "pull", cwd=two.b.path)
    before = state_files(two.b)
    mtimes = {p: p.stat().st_mtime_ns for p in store(two.b).joinpath("cold_nodes").iterdir()}
    again = _ok("fold", "pull", cwd=two.b.path)["sessions"][SESSION]
    assert again["indexed"] == 0 and again["unchanged"] == 8 and again["written"] == 0
    assert state_files(two.b) == before
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    assert len(indexed(two.b)) == 8


def test_pull_merges_into_a_store_with_its_own_steps_and_the_merged_push_fast_forwards(
    two: Machines,
) -> None:
    fold_scenario(two.a)
    _ok("fold", "push", cwd=two.a.path)
    cli("fold", "add", "20", "B's own step", "--session", SESSION, input="b only\n", cwd=two.b.path)
    res = _ok("fold", "pull", cwd=two.b.path)["sessions"][SESSION]
    assert res["indexed"] == 8
    assert sorted(indexed(two.b)) == [1, 2, 3, 4, 5, 6, 7, 8, 20]
    pushed = _ok("fold", "push", cwd=two.b.path)["sessions"][SESSION]
    parents = two.b.git("rev-parse", f"{pushed['commit']}^@").splitlines()
    assert parents == [two.a.git("rev-parse", f"{REF_PREFIX}{SESSION}")]
    # A pulls B's step back: its own nodes are identical (no-op), step 20 is new.
    back = _ok("fold", "pull", cwd=two.a.path)["sessions"][SESSION]
    assert back["indexed"] == 1 and back["unchanged"] == 8
    assert node_file(two.a, 20).read_bytes() == node_file(two.b, 20).read_bytes()


def test_push_is_refused_while_the_remote_has_nodes_not_pulled_then_merges(two: Machines) -> None:
    fold_scenario(two.a)
    _ok("fold", "push", cwd=two.a.path)
    _ok("fold", "pull", cwd=two.b.path)
    cli("fold", "add", "30", "B folds on", "--session", SESSION, input="from b\n", cwd=two.b.path)
    _ok("fold", "push", cwd=two.b.path)
    cli("fold", "add", "31", "A folds on", "--session", SESSION, input="from a\n", cwd=two.a.path)
    res = cli("fold", "push", "--json", cwd=two.a.path)
    assert res.returncode == 1
    assert res.json()["problems"][0]["code"] == "remote_ahead"
    assert "fold pull" in res.json()["problems"][0]["message"]
    _ok("fold", "pull", cwd=two.a.path)
    merged = _ok("fold", "push", cwd=two.a.path)["sessions"][SESSION]
    assert len(two.a.git("rev-parse", f"{merged['commit']}^@").splitlines()) == 2
    assert git(two.remote, "rev-parse", f"{REF_PREFIX}{SESSION}") == merged["commit"]
    _ok("fold", "pull", cwd=two.b.path)
    assert sorted(indexed(two.b)) == sorted(indexed(two.a)) == [*range(1, 9), 30, 31]


def test_pull_of_a_session_the_remote_lacks_is_not_found(two: Machines) -> None:
    res = cli("fold", "pull", "--session", "nope", cwd=two.b.path)
    assert res.returncode == 4 and res.stderr.count("\n") == 1
    res = cli("fold", "pull", "--json", cwd=two.b.path)
    assert res.returncode == 0 and res.json()["data"]["sessions"] == {}


def test_a_pulled_session_is_a_whole_store_refolding_its_transcript_in_b_writes_nothing(
    two: Machines, transcripts_dir: Path
) -> None:
    """Pull indexes each node's stable step key too, so B folding the same transcript (its
    PreCompact hook, say) recognises every step instead of storing them again."""
    transcript = transcripts_dir / "claude-code" / "tool_heavy.jsonl"
    folded = _ok(
        "fold", "session", "--transcript", str(transcript), "--session", "th", cwd=two.a.path
    )
    _ok("fold", "push", "--session", "th", cwd=two.a.path)
    assert (
        _ok("fold", "pull", "--session", "th", cwd=two.b.path)["sessions"]["th"]["indexed"]
        == folded["steps"]
    )
    again = _ok(
        "fold", "session", "--transcript", str(transcript), "--session", "th", cwd=two.b.path
    )
    assert again["steps"] == folded["steps"] and again["written"] == 0
    _ok("fold", "validate", "--session", "th", cwd=two.b.path)
