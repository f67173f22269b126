"""Fold a session's steps under their stable keys: incremental, idempotent, never positional.

``fold session``, PreCompact, ``fork`` and the renderer's store all come through here. Nodes are
planned and built outside the store lock (scrubbing and token counting are the slow part), then
the plan is re-checked under the lock against what other writers committed meanwhile; only a
changed decision rebuilds a node. Writes keep the two phases of ``store``: node files first,
then their index rows and keys in one transaction. See ``stepkeys`` for the id rules.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextfork.atomic import fsync_dir, write_bytes
from contextfork.cold import index as idx
from contextfork.cold import stepkeys
from contextfork.cold.layout import StoreLayout, policy_sha256, store_lock
from contextfork.cold.node import node_bytes
from contextfork.cold.store import ensure_policy, read_node
from contextfork.errors import IntegrityError
from contextfork.scratch import Spill

if TYPE_CHECKING:
    from contextfork.transcript.model import Step

#: build(step, step_id, open) -> node
Builder = Callable[["Step", int, bool], dict[str, Any]]
#: What a fold keeps of each node once it is stored (its report's figures): the rest is on disk.
_KEPT = ("step_id", "payload_sha256", "artifact_sha256", "payload_bytes", "token_count",
         "redactions")  # fmt: skip


class _Built:
    """A node built outside the lock, parked until it is written as its file's bytes,
    compressed, in a scratch file: a whole session's nodes held as objects were larger than
    the transcript, and compressed still a third of it (issue 27)."""

    __slots__ = ("at", "payload_sha256", "spill")

    def __init__(self, node: dict[str, Any], spill: Spill) -> None:
        self.payload_sha256 = str(node["payload_sha256"])
        self.spill = spill
        self.at = spill.put(zlib.compress(node_bytes(node), 1))

    def data(self) -> bytes:
        return zlib.decompress(self.spill.get(*self.at))


def _summary(node: dict[str, Any]) -> dict[str, Any]:
    return {k: node[k] for k in _KEPT if k in node}


@dataclass
class Placed:
    step: Step
    step_id: int
    action: str  # write | unchanged | adopt
    built: _Built | None
    close: bool = False  # an open version turned out complete: later other bytes conflict
    open: bool = False  # the session's last step at this fold
    # the stored node's figures (``_KEPT``), set once it is stored or verified
    node: dict[str, Any] = field(default_factory=dict)


@dataclass
class KeyedFold:
    placed: list[Placed] = field(default_factory=list)

    @property
    def ids(self) -> dict[int, int]:
        """Transcript position → cold step id, for this session."""
        return {p.step.index: p.step_id for p in self.placed}

    @property
    def written(self) -> int:
        return sum(p.action == "write" for p in self.placed)


def _plan(conn: Any, layout: StoreLayout, steps: Sequence[Step], build: Builder,
          cache: dict[tuple[str, int, bool], _Built], spill: Spill, open_last: bool,
          locked: bool) -> list[Placed]:
    stepkeys.ensure(conn)
    if locked:
        stepkeys.sync(conn, layout)
    alloc = stepkeys.Allocator(conn)
    out: list[Placed] = []

    def built(step: Step, sid: int, is_open: bool) -> _Built:
        k = (step.identity, sid, is_open)
        if k not in cache:
            cache[k] = _Built(build(step, sid, is_open), spill)
        return cache[k]

    for n, step in enumerate(steps):
        is_open = open_last and n == len(steps) - 1
        sid = alloc.candidate(step.identity, step.index)
        node = built(step, sid, is_open)
        action = alloc.decide(step.identity, sid, node.payload_sha256)
        if action == "version":
            sid = alloc.fresh()
            node = built(step, sid, is_open)
            action = "write"
        held = alloc.by_id.get(sid)
        # stored open, now followed by another step and byte-identical: it was complete
        close = action == "unchanged" and not is_open and held is not None and held.open
        out.append(Placed(step, sid, action, node, close, is_open))
    return out


def fold_keyed(
    layout: StoreLayout, steps: Sequence[Step], build: Builder, *, open_last: bool = True,
    view: bool = True,
) -> KeyedFold:
    """Fold ``steps`` (in session order); the last one is stored *open* unless told otherwise.
    ``view=False`` leaves the IPCF view to the next fold that exports it (or ``fold index``):
    it is marked stale, and rewriting it is O(store) on every call."""
    layout.ensure_contained()
    cache: dict[tuple[str, int, bool], _Built] = {}
    with ExitStack() as scratch:
        with idx.opened(layout) as conn:  # the store's directory exists from here on
            spill = scratch.enter_context(Spill(layout.dir))
            _plan(conn, layout, steps, build, cache, spill, open_last, False)  # builds unlocked
        return _commit(layout, steps, build, cache, spill, open_last=open_last, view=view)


def _commit(layout: StoreLayout, steps: Sequence[Step], build: Builder,
            cache: dict[tuple[str, int, bool], _Built], spill: Spill, *, open_last: bool,
            view: bool) -> KeyedFold:
    """Under the store lock: plan again against what others committed, then store."""
    with store_lock(layout):
        policy = ensure_policy(layout)
        with idx.opened(layout) as conn:
            placed = _plan(conn, layout, steps, build, cache, spill, open_last, True)
            cache.clear()  # what is not placed is not written
            pending: list[Placed] = []
            written = False
            for p in placed:
                path = layout.node_path(p.step_id)
                if p.action == "write":
                    assert p.built is not None
                    if path.exists() or path.is_symlink():
                        existing = read_node(layout, p.step_id, check_index=False)  # an orphan of a crash
                        if existing["payload_sha256"] != p.built.payload_sha256:
                            raise IntegrityError(
                                f"cold_nodes/{path.name} is not indexed and holds other bytes",
                                hint="run `contextfork fold validate`, then `contextfork fold index`",
                            )
                        p.built = None  # indexed as the file holds it
                    else:  # phase 1: the node file (its rename flushed below, once for all)
                        write_bytes(path, p.built.data(), sync_dir=False)
                        written = True
                    pending.append(p)
                else:
                    p.built = None
                    p.node = _summary(read_node(layout, p.step_id))  # stored bytes re-verified (exit 3)
            if written:  # every node file on disk, renames too, before the index names one
                fsync_dir(layout.nodes_dir)
            with idx.transaction(conn):  # phase 2: index rows and keys, one transaction
                for p in pending:  # one node at a time: the bytes just written, or the orphan's
                    node = (json.loads(p.built.data()) if p.built is not None
                            else read_node(layout, p.step_id, check_index=False))  # fmt: skip
                    idx.add_node(conn, node)
                    stepkeys.record(conn, node)
                    p.node, p.built = _summary(node), None
                for p in placed:
                    if p.action == "adopt":
                        stepkeys.adopt(conn, p.step_id, p.step.identity, p.open)
                    elif p.close:
                        conn.execute("UPDATE step_keys SET open=0 WHERE step_id=?", (p.step_id,))
            if pending and view:
                idx.export_ipcf_view(conn, layout, policy_sha256(policy))
    return KeyedFold(placed)


def known_ids(layout: StoreLayout, steps: Sequence[Step]) -> dict[int, int]:
    """Transcript position → the cold id of the newest stored version of that step's key."""
    if not layout.sqlite.exists():
        return {}
    with idx.opened(layout) as conn:
        stepkeys.ensure(conn)
        latest: dict[str, int] = {}
        for sid, key in conn.execute("SELECT step_id, key FROM step_keys ORDER BY step_id"):
            if key is not None:
                latest[str(key)] = int(sid)
    return {s.index: latest[s.identity] for s in steps if s.identity in latest}


def latest_version(layout: StoreLayout, step_id: int) -> int:
    """The newest stored version of the key ``step_id`` holds (``step_id`` itself when it has
    no newer one): a position-named step read back after it grew is its complete version."""
    if not layout.sqlite.exists():
        return step_id
    with idx.opened(layout) as conn:
        stepkeys.ensure(conn)
        row = conn.execute(
            "SELECT MAX(b.step_id) FROM step_keys a JOIN step_keys b ON a.key = b.key "
            "WHERE a.step_id = ?", (step_id,)
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else step_id
