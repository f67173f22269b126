"""Stable step identity in the cold store: a step's key (its harness id) → IPCF integer ids.

IPCF-1.1 names a node by an integer ``step_id`` (``cold_nodes/step_NNNNNN.json``), but a
transcript position is not an identity: a step still growing when PreCompact fires mid-turn,
or a view renumbered by a compaction, would put different bytes under the same number. So a
folded transcript step carries its stable key (``Step.key``: the Claude Code uuid of its first
line, the pi entry id, …) in ``source.step_key`` of its node, and the integer id is *allocated
once per key version and never reused*:

- a new key gets its transcript position when that id is still free (a store folded in order
  keeps step N = node N), else the next id after the highest ever used;
- the same key with the same stored bytes is unchanged (the stored node is re-verified);
- the same key with different bytes is a new version under a new id only when the stored
  version was folded *open* (``source.open``: it was the session's last step, the only one that
  can still grow); the older version is marked ``superseded_by`` the new one. For a step that
  was already complete it is a real conflict: ``KeyConflict``, an integrity error (exit 3).

The key → ids map lives in the ``step_keys`` table of ``index.sqlite3``, written in the same
transaction as the node's index rows (``record``). It is derived data like the rest of the
index: ``sync`` rebuilds missing rows from the node files' ``source`` and drops stale ones.
See docs/NOTES-identity.md.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from contextfork.cold.layout import STEP_MAX, StoreLayout
from contextfork.errors import IntegrityError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS step_keys(
  step_id INTEGER PRIMARY KEY,
  key TEXT,
  open INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS step_keys_by_key ON step_keys(key, step_id);
"""


class KeyConflict(IntegrityError):
    """A complete step's stable key already holds different bytes: the history was altered."""


def ensure(conn: sqlite3.Connection) -> None:
    conn.executescript(_SCHEMA)


def source_key(node: dict[str, Any]) -> tuple[str | None, bool]:
    src = node.get("source")
    if not isinstance(src, dict):
        return None, False
    key = src.get("step_key")
    return (key if isinstance(key, str) and key else None), bool(src.get("open"))


def record(conn: sqlite3.Connection, node: dict[str, Any]) -> None:
    """Index the key of a node being committed (caller holds the index transaction and has
    called ``ensure`` before it: DDL would end the transaction)."""
    key, is_open = source_key(node)
    if key is None:
        return
    sid = int(node["step_id"])
    conn.execute("INSERT OR REPLACE INTO step_keys VALUES (?,?,?)", (sid, key, int(is_open)))
    older = [
        int(r[0]) for r in conn.execute(
            "SELECT step_id FROM step_keys WHERE key=? AND step_id<?", (key, sid)
        )
    ]
    if older:
        conn.executemany(
            "UPDATE nodes SET superseded_by=? WHERE step_id=?", [(sid, o) for o in older]
        )


def adopt(conn: sqlite3.Connection, step_id: int, key: str, is_open: bool = False) -> None:
    """Give a node folded before keys existed (same bytes, same position) its key."""
    conn.execute("INSERT OR REPLACE INTO step_keys VALUES (?,?,?)", (step_id, key, int(is_open)))


def sync(conn: sqlite3.Connection, layout: StoreLayout) -> None:
    """Make ``step_keys`` agree with the indexed nodes (after a crash, a rebuild, old stores)."""
    from contextfork.cold.store import read_node

    ensure(conn)
    conn.execute("DELETE FROM step_keys WHERE step_id NOT IN (SELECT step_id FROM nodes)")
    missing = [
        int(r[0]) for r in conn.execute(
            "SELECT step_id FROM nodes WHERE step_id NOT IN (SELECT step_id FROM step_keys)"
        )
    ]
    for sid in missing:
        key, is_open = source_key(read_node(layout, sid))
        conn.execute("INSERT INTO step_keys VALUES (?,?,?)", (sid, key, int(is_open)))


@dataclass
class Stored:
    step_id: int
    key: str | None
    open: bool
    payload_sha256: str


class Allocator:
    """Decides, step by step, which integer id a keyed step's bytes go under."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT n.step_id, k.key, COALESCE(k.open, 0), n.payload_sha256 "
            "FROM nodes n LEFT JOIN step_keys k ON k.step_id = n.step_id"
        ).fetchall()
        self.by_id = {int(r[0]): Stored(int(r[0]), r[1], bool(r[2]), str(r[3])) for r in rows}
        self.latest: dict[str, Stored] = {}
        for s in sorted(self.by_id.values(), key=lambda s: s.step_id):
            if s.key is not None:
                self.latest[s.key] = s
        self.reserved: set[int] = set()
        self.high = max(self.by_id, default=0)

    def candidate(self, key: str, position: int) -> int:
        """The id to build a node under first: the key's latest version, else its position
        when free (or held by an unkeyed node that may be the same step), else a fresh id."""
        known = self.latest.get(key)
        if known is not None:
            return known.step_id
        held = self.by_id.get(position)
        if 1 <= position <= STEP_MAX and position not in self.reserved and (
            held is None or held.key is None
        ):
            self.reserved.add(position)
            return position
        return self.fresh()

    def fresh(self) -> int:
        self.high = max(self.high, max(self.reserved, default=0)) + 1
        if self.high > STEP_MAX:
            raise IntegrityError(f"cold store is full: step ids above {STEP_MAX}")
        self.reserved.add(self.high)
        return self.high

    def decide(self, key: str, step_id: int, payload_sha256: str) -> str:
        """``unchanged`` | ``adopt`` | ``write`` | ``version`` for bytes built under ``step_id``.

        ``version`` means: rebuild under ``fresh()`` (the stored one was open and differs).
        """
        held = self.by_id.get(step_id)
        if held is None:
            return "write"
        if held.payload_sha256 == payload_sha256:
            return "unchanged" if held.key == key else "adopt"
        if held.key is None:  # an unkeyed node with other bytes at this position: not ours
            return "version"
        if held.open:
            return "version"
        raise KeyConflict(
            f"step {step_id} ({key}) is complete in the cold store and the transcript now has "
            f"different bytes for it (stored {held.payload_sha256[:12]}, "
            f"transcript {payload_sha256[:12]})",
            hint="the transcript was edited after it was folded; run `contextfork fold validate`",
        )
