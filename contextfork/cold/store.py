"""Opening a session's store, folding one node (two-phase), and reading nodes back verified.

Two phases under the store lock: (1) the node file is written atomically (temp + fsync +
rename); (2) the index rows are committed in one sqlite transaction. A crash between the two
leaves a node file the index does not list: ``validate`` reports it as an orphan and
``fold index`` (or re-folding the same step) repairs it. A step id is immutable: folding the
same bytes again is a no-op, folding different bytes under it is refused.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfork.atomic import dump_json_bytes, write_bytes
from contextfork.cold import index as idx
from contextfork.cold.layout import (
    DEFAULT_POLICY,
    StoreLayout,
    check_step_id,
    policy_differences,
    policy_problems,
    policy_sha256,
    step_key,
    store_lock,
)
from contextfork.cold.node import build_node, node_bytes, verify_node
from contextfork.errors import CheckFailed, ContextforkError, IntegrityError, NotFoundError
from contextfork.inputfile import read_state_file


class StepConflict(CheckFailed):
    """A different payload under an existing step id: step ids are immutable."""


@dataclass
class FoldOutcome:
    step_id: int
    status: str  # "written" | "unchanged" | "repaired"
    node: dict[str, Any]
    path: Path

    def to_json(self) -> dict[str, Any]:
        n = self.node
        return {
            "step_id": self.step_id,
            "step_key": step_key(self.step_id),
            "status": self.status,
            "path": str(self.path),
            "payload_sha256": n["payload_sha256"],
            "projection_sha256": n["projection_sha256"],
            "artifact_sha256": n["artifact_sha256"],
            "payload_bytes": n["payload_bytes"],
            "token_count": n["token_count"],
            "redactions": len(n["redactions"]),
            "intents": n["intents"],
            "refs": n["refs"],
        }


def load_policy(layout: StoreLayout) -> dict[str, Any]:
    """The store's page-in policy, ``hydration_policy.json`` (defaults when the store has none yet)."""
    p = layout.policy_file
    if p.is_symlink():
        raise IntegrityError(f"{p} is a symlink", hint="the policy must be a plain file")
    if not p.exists():
        return dict(DEFAULT_POLICY)
    try:
        data = json.loads(p.read_bytes())
    except (OSError, json.JSONDecodeError) as err:
        raise IntegrityError(f"{p}: unreadable page-in policy ({err})") from err
    if not isinstance(data, dict):
        raise IntegrityError(f"{p}: page-in policy is not an object")
    bad = policy_problems(data)
    if bad:
        raise IntegrityError(
            f"{p.name}: {bad[0]}" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""),
            hint="stay within the schema's bounds, or delete the file to use the default policy",
        )
    return data


def policy_notice(policy: dict[str, Any]) -> str | None:
    """One line saying how the store's policy differs from the default (None when it does not)."""
    diffs = policy_differences(policy)
    if not diffs:
        return None
    return "hydration_policy.json differs from the default: " + "; ".join(diffs)


def ensure_policy(layout: StoreLayout) -> dict[str, Any]:
    if not layout.policy_file.exists():
        write_bytes(layout.policy_file, dump_json_bytes(DEFAULT_POLICY))
    return load_policy(layout)


def check_recorded(
    layout: StoreLayout, node: dict[str, Any], conn: sqlite3.Connection | None = None
) -> None:
    """The node must be the one the index recorded at fold time, as ``validate`` checks.

    A node rewritten with all three hashes recomputed verifies on its own; only the identity
    the index recorded when it was folded tells it apart. A node the index does not list is an
    orphan (IPCF CONF-12 scenario A, as the reference conformance suite checks it): refused, not
    served on its own hashes — a fold interrupted between its two phases leaves one, and
    `fold index --rebuild` adopts it after verifying it.
    """
    sid = int(node["step_id"])
    if conn is None:
        if not layout.sqlite.exists():
            recorded = None
        else:
            with idx.opened(layout) as own:
                recorded = idx.has_node(own, sid)
    else:
        recorded = idx.has_node(conn, sid)
    if recorded is None:
        raise IntegrityError(
            f"cold_nodes/{step_key(sid)}.json is an orphan: the index does not list it "
            "(IPCF CONF-12)",
            hint="`contextfork fold index --rebuild` adopts verified node files",
        )
    if recorded != node["artifact_sha256"]:
        raise IntegrityError(
            f"cold_nodes/{step_key(sid)}.json: artifact_sha256 differs from the identity the "
            "index recorded at fold time (the node was rewritten and re-hashed)",
            hint="run `contextfork fold validate`",
        )


def _indexed(layout: StoreLayout, step_id: int, conn: sqlite3.Connection | None) -> bool:
    if conn is not None:
        return idx.has_node(conn, step_id) is not None
    if not layout.sqlite.exists():
        return False
    with idx.opened(layout) as own:
        return idx.has_node(own, step_id) is not None


def read_node(
    layout: StoreLayout, step_id: int, *, conn: sqlite3.Connection | None = None,
    check_index: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """One node, every identity re-verified (IntegrityError), NotFoundError when absent.

    Also checked against the index's recorded identity (``check_recorded``), unless the caller
    is the fold itself comparing a file with what it is about to index."""
    check_step_id(step_id)
    layout.ensure_contained()
    path = layout.node_path(step_id)
    if path.is_symlink():
        raise IntegrityError(f"{path} is a symlink", hint="cold nodes must be plain files")
    raw = read_state_file(path, f"cold_nodes/{path.name}")  # a FIFO is refused, never waited on
    if raw is None:
        if check_index and _indexed(layout, step_id, conn):
            raise IntegrityError(
                f"step {step_id}: the index lists cold_nodes/{path.name} but the file is missing "
                "(a broken reference, IPCF CONF-12)",
                hint="run `contextfork fold validate`; the bytes of that step are gone",
            )
        raise NotFoundError(
            f"step {step_id} is not in cold store {layout.session_id!r}",
            hint="list steps with `contextfork fold status`",
        )
    node = verify_node(raw, where=f"cold_nodes/{path.name}", step_id=step_id)
    if check_index:
        check_recorded(layout, node, conn)
    return node


def read_nodes(
    layout: StoreLayout, step_ids: Iterable[int]
) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """``(step_id, node, None)`` for each node that verifies as ``read_node`` verifies it, else
    ``(step_id, None, why)``: every node of a store, over one index connection (one per node
    cost a connection and a schema check each)."""
    conn: sqlite3.Connection | None = None
    why: str | None = None
    if layout.sqlite.exists():
        try:
            conn = idx.connect(layout)
        except ContextforkError as err:
            why = err.message
    try:
        for step_id in step_ids:
            if why is not None:
                yield step_id, None, why
                continue
            try:
                yield step_id, read_node(layout, step_id, conn=conn), None
            except ContextforkError as err:
                yield step_id, None, err.message
            except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
                yield step_id, None, idx.failure(layout, err).message
    finally:
        if conn is not None:
            conn.close()


def _commit(layout: StoreLayout, node: dict[str, Any], *, auto_view: bool) -> FoldOutcome:
    sid = int(node["step_id"])
    path = layout.node_path(sid)
    policy = ensure_policy(layout)
    with idx.opened(layout) as conn:
        listed = idx.has_node(conn, sid)
        if path.exists() or path.is_symlink():
            existing = read_node(layout, sid, check_index=False)
            if existing["artifact_sha256"] != node["artifact_sha256"]:
                raise StepConflict(
                    f"step {sid} already holds a different payload "
                    f"(stored {existing['payload_sha256'][:12]}, new {node['payload_sha256'][:12]})",
                    hint="step ids are immutable; fold under a new step id",
                )
            if listed == node["artifact_sha256"]:
                return FoldOutcome(sid, "unchanged", existing, path)
            with idx.transaction(conn):
                if listed is not None:
                    conn.execute("DELETE FROM nodes WHERE step_id=?", (sid,))
                idx.add_node(conn, existing)
            return FoldOutcome(sid, "repaired", existing, path)
        if listed is not None:
            raise IntegrityError(
                f"the index lists step {sid} but cold_nodes/{path.name} is missing",
                hint="run `contextfork fold validate`, then `contextfork fold index`",
            )
        write_bytes(path, node_bytes(node))  # phase 1: the node, atomically
        with idx.transaction(conn):  # phase 2: its index rows, in one transaction
            idx.add_node(conn, node)
        if auto_view and idx.at_most(conn, idx.AUTO_VIEW_MAX_NODES):
            idx.export_ipcf_view(conn, layout, policy_sha256(policy))
    return FoldOutcome(sid, "written", node, path)


def fold_node(
    layout: StoreLayout,
    *,
    step_id: int,
    summary: str,
    payload: bytes,
    intents: list[str] | None = None,
    refs: list[int] | None = None,
    index_text: str | None = None,
    extra_commands: tuple[str, ...] = (),
    source: dict[str, Any] | None = None,
    auto_view: bool = True,
    token_counter: Any = None,
) -> FoldOutcome:
    """Scrub, hash and store one step; the CPU work happens before the lock is taken."""
    check_step_id(step_id)
    layout.ensure_contained()
    policy = load_policy(layout)
    node = build_node(
        session_id=layout.session_id,
        step_id=step_id,
        summary=summary,
        payload=payload,
        policy_sha256=policy_sha256(policy),
        intents=intents,
        refs=refs,
        index_text=index_text,
        extra_commands=extra_commands,
        source=source,
        token_counter=token_counter,
    )
    with store_lock(layout):
        return _commit(layout, node, auto_view=auto_view)


def node_files(layout: StoreLayout) -> list[Path]:
    if not layout.nodes_dir.is_dir():
        return []
    return sorted(p for p in layout.nodes_dir.iterdir() if not p.name.startswith("."))

