"""A fold makes its node files durable before the index names them, with one flush of their
directory for the whole fold (not one per node: on a disk where a directory flush costs
milliseconds, 3,000 of them were seconds of a 55 MB ``fork``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfork import atomic
from contextfork.cold import api, keyed
from contextfork.cold import index as idx
from tests.transcript.test_claude_code import build_session_file


def test_a_fold_flushes_the_node_directory_once_and_before_the_index_names_a_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, Path]] = []
    real_flush, real_add = atomic.fsync_dir, idx.add_node

    def flush(path: Path) -> None:
        events.append(("flush", Path(path)))
        real_flush(path)

    def add(conn: Any, node: dict[str, Any]) -> None:
        events.append(("index", Path()))
        real_add(conn, node)

    monkeypatch.setattr(atomic, "fsync_dir", flush)  # the rename's flush of any atomic write
    monkeypatch.setattr(keyed, "fsync_dir", flush, raising=False)
    monkeypatch.setattr(idx, "add_node", add)
    path = build_session_file(tmp_path / "s.jsonl")
    store = tmp_path / "cold" / "cc"
    res = api.fold_session(path, store_dir=store)
    written = res.data["written"]
    assert written >= 2
    nodes_dir = next(store.rglob("cold_nodes"))
    flushes = [i for i, (kind, where) in enumerate(events) if kind == "flush" and where == nodes_dir]
    indexed = [i for i, (kind, _where) in enumerate(events) if kind == "index"]
    assert len(indexed) == written
    assert len(flushes) == 1, f"{len(flushes)} flushes of cold_nodes/ for {written} nodes"
    assert flushes[0] < indexed[0]
    assert sorted(p.name for p in nodes_dir.iterdir()) == sorted(
        p.name for p in nodes_dir.glob("*.json")
    )  # no temporary file left behind
    assert api.validate(store_dir=store).exit_code == 0
