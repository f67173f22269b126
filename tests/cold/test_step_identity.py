"""The cold store keys transcript steps on their stable identity, not on their position."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.helpers import Repo, cli
from tests.transcript import cc21

SID = cc21.SESSION


def _fold(repo: Repo, t: Path) -> Any:
    return cli("fold", "session", "--transcript", str(t), "--session", SID, "--json",
                   cwd=repo.path)


def _store(repo: Repo) -> Path:
    return repo.path / ".contextfork" / "cold" / SID


def _nodes(repo: Repo) -> list[str]:
    return sorted(p.name for p in (_store(repo) / "cold_nodes").iterdir())


def test_folding_again_after_the_session_grew_adds_only_the_new_steps(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc21.write(tmp_path / "s.jsonl", second_compaction=False)
    first = _fold(repo, t)
    assert first.returncode == 0, first.stderr
    assert first.json()["data"]["written"] == 6
    cc21.write(t, grow=3)  # the second compaction, its answer and three more calls
    again = _fold(repo, t)
    assert again.returncode == 0, again.stderr
    assert (again.json()["data"]["written"], again.json()["data"]["steps"]) == (4, 10)
    assert _nodes(repo) == [f"step_{i:06d}.json" for i in range(1, 11)]
    idem = _fold(repo, t)
    assert idem.returncode == 0 and idem.json()["data"]["written"] == 0


def test_a_step_still_growing_is_stored_as_a_new_version_never_a_conflict(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc21.write_lines(tmp_path / "s.jsonl", cc21.upto("s5"))  # PreCompact fired mid-turn: no result yet
    assert _fold(repo, t).returncode == 0
    cc21.write(t)
    res = _fold(repo, t)
    assert res.returncode == 0, res.stderr
    data = res.json()["data"]
    assert data["step_ids"] == {"5": 6, "6": 7, "7": 8}
    conn = sqlite3.connect(_store(repo) / "index.sqlite3")
    rows = dict(conn.execute("SELECT step_id, superseded_by FROM nodes").fetchall())
    conn.close()
    assert rows[5] == 6 and rows[6] is None  # the partial version points to the complete one
    old = cli("fold", "show", "5", "--session", SID, "--json", cwd=repo.path)
    assert old.returncode == 0 and cc21.uid("s5") in old.stdout
    new = cli("fold", "show", "6", "--session", SID, "--json", cwd=repo.path)
    assert "All checks passed!" in new.stdout


def test_a_rewound_session_folds_its_new_branch_under_new_ids(repo: Repo, tmp_path: Path) -> None:
    lines = cc21.lines(second_compaction=False)
    t = cc21.write_lines(tmp_path / "s.jsonl", lines)
    assert _fold(repo, t).returncode == 0
    branch = dict(lines[-2], uuid="aaaaaaaa-0000-4000-8000-000000000001",
                  parentUuid=cc21.uid("s2"), message={"role": "user", "content": "no, revert"})
    cc21.write_lines(t, [*lines, branch])
    res = _fold(repo, t)
    assert res.returncode == 0, res.stderr  # position 3 now holds another step: no conflict
    assert res.json()["data"]["step_ids"] == {"3": 7}


def test_a_complete_step_with_other_bytes_under_its_key_is_an_integrity_error(
    repo: Repo, tmp_path: Path
) -> None:
    lines = cc21.lines()
    t = cc21.write_lines(tmp_path / "s.jsonl", lines)
    assert _fold(repo, t).returncode == 0
    edited = [dict(o) for o in lines]
    for o in edited:
        if o.get("uuid") == cc21.uid("s2"):
            o["message"] = dict(o["message"], content=[{"type": "text", "text": "all green"}])
    cc21.write_lines(t, edited)
    res = _fold(repo, t)
    assert res.returncode == 3 and "different bytes" in res.stdout


def test_a_tampered_node_under_the_same_key_is_still_exit_3(repo: Repo, tmp_path: Path) -> None:
    t = cc21.write(tmp_path / "s.jsonl")
    assert _fold(repo, t).returncode == 0
    node = _store(repo) / "cold_nodes" / "step_000002.json"
    data = json.loads(node.read_bytes())
    data["content"] = data["content"].replace("5434", "9999")
    node.write_text(json.dumps(data))
    res = _fold(repo, t)
    assert res.returncode == 3 and "tampered" in res.stdout


def test_an_open_step_seen_complete_and_unchanged_is_closed_so_later_edits_conflict(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc21.write(tmp_path / "s.jsonl", second_compaction=False)  # step 6 is last: open
    assert _fold(repo, t).returncode == 0
    lines = cc21.lines(grow=1)
    cc21.write_lines(t, lines)
    assert _fold(repo, t).json()["data"]["written"] == 2  # step 6 unchanged, now complete
    for o in lines:
        if o.get("uuid") == cc21.uid("s6"):
            o["message"] = dict(o["message"], content=[{"type": "text", "text": "lint fails"}])
    cc21.write_lines(t, lines)
    assert _fold(repo, t).returncode == 3


def test_the_render_store_reads_a_grown_step_by_position_as_its_newest_version(
    tmp_path: Path,
) -> None:
    from contextfork.cold.layout import layout_at
    from contextfork.render.coldsource import ColdSource, persist_steps
    from contextfork.transcript import load_session

    layout = layout_at(tmp_path / "store" / "s-render")
    partial = load_session(cc21.write_lines(tmp_path / "a.jsonl", cc21.upto("s5")))
    persist_steps(layout, partial, [s.index for s in partial.steps])  # step 5 still growing
    whole = load_session(cc21.write(tmp_path / "b.jsonl"))
    rep = persist_steps(layout, whole, [s.index for s in whole.steps])
    assert rep.ids[5] != 5
    assert "All checks passed!" in ColdSource(layout).step_text(5)
    assert "All checks passed!" in ColdSource(layout, rep.ids).step_text(5)


def test_a_store_folded_by_position_before_keys_existed_is_adopted_not_duplicated(
    repo: Repo, tmp_path: Path
) -> None:
    from contextfork.cold import api
    from contextfork.transcript import load_session

    t = cc21.write(tmp_path / "s.jsonl")
    for step in load_session(t).steps:  # what the positional fold used to write
        api.fold_step(step.index, f"Step {step.index}", step.raw_bytes(), repo=repo.path,
                      session=SID, source={"kind": "transcript"})
    res = _fold(repo, t)
    assert res.returncode == 0, res.stdout
    assert res.json()["data"]["written"] == 0 and _nodes(repo) == [
        f"step_{i:06d}.json" for i in range(1, 8)
    ]
    cc21.write(t, grow=1)
    grown = _fold(repo, t)
    assert grown.json()["data"]["written"] == 1 and grown.json()["data"]["step_ids"] == {}
