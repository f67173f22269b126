"""Cold nodes fetched from a remote: untrusted until every check passes, then published at once.

A fetched commit is read in this order, and the first failure stops everything for its session
with nothing written locally:

1. the tree listing (``ls-tree -r -l``; no blob read yet): every entry must be a regular file
   ``cold_nodes/step_NNNNNN.json`` (mode 100644, a valid step id, a UTF-8 name, no duplicate),
   so ``..``, absolute paths, ``.git``, symlinks, gitlinks, nested or extra directories and stray
   files are refused; then the object sizes git records, per object and in total;
2. each blob the local store does not already hold byte for byte (same git blob id) is read
   (``cat-file --batch``, its announced size checked again before the content is read) and
   verified like a local read: all three identities (payload, IPCF projection, artifact), the
   node schema, the step id of its name and the session of its ref; a different node under a
   step id the local store uses (its file, or the identity its index recorded) is a conflict;
3. publish, under the store's lock, after re-checking the local store: the node files (written
   in a staging directory, flushed together, each renamed into place without replacing
   anything), then their index rows in one transaction. Until that transaction commits no read
   serves a pulled node (an unindexed node file is an orphan, refused by ``read_node``), so an
   interrupted pull publishes nothing; pulling again adopts the identical files it left.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork import atomic, gitstate, scratch
from contextfork.cold import index as idx
from contextfork.cold import stepkeys
from contextfork.cold.layout import (
    STEP_MAX,
    StoreLayout,
    policy_sha256,
    step_key,
    step_of_name,
    store_lock,
)
from contextfork.cold.node import verify_node
from contextfork.envvars import positive_int
from contextfork.errors import ContextforkError, GitError, IntegrityError
from contextfork.paths import unsafe_reason
from contextfork.testhooks import kill_point

NODES_DIR = "cold_nodes"
MAX_ENV = "CONTEXTFORK_COLD_PULL_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # one session's nodes
NODE_MAX_ENV = "CONTEXTFORK_COLD_PULL_MAX_NODE_BYTES"
DEFAULT_NODE_MAX_BYTES = 128 * 1024 * 1024  # any one node (read whole to verify it)
STAGING = ".pull-"  # node files being written, inside the session directory


def max_bytes() -> int:
    """Most bytes one pulled session may hold (env overrides)."""
    return positive_int(MAX_ENV, DEFAULT_MAX_BYTES)


def max_node_bytes() -> int:
    """Most bytes one pulled node may hold (env overrides); never more than a session."""
    return min(positive_int(NODE_MAX_ENV, DEFAULT_NODE_MAX_BYTES), max_bytes())


@dataclass
class Incoming:
    """One session's fetched commit, verified: what publishing it would change locally."""

    session: str
    commit: str
    nodes: int = 0  # entries in the fetched tree
    steps: list[int] = field(default_factory=list)  # their step ids
    new: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)  # (bytes, node)
    adopt: list[int] = field(default_factory=list)  # identical local files the index lacks


def _refuse(session: str, what: str) -> IntegrityError:
    return IntegrityError(f"cold session {session}: {what}; nothing was written")


def _entry_problem(e: gitstate.TreeEntry) -> str | None:
    try:
        e.path.encode("utf-8")
    except UnicodeEncodeError:
        return f"tree entry {e.path!r} has a non-UTF-8 name"
    reason = unsafe_reason(e.path)
    if reason:
        return f"tree entry {e.path!r} refused: {reason}"
    if e.mode == "120000":
        return f"tree entry {e.path!r} is a symlink"
    if e.mode == "160000" or e.kind == "commit":
        return f"tree entry {e.path!r} is a gitlink (submodule)"
    if e.kind != "blob" or e.mode != "100644":
        return f"tree entry {e.path!r} is a {e.kind} of mode {e.mode}, not a regular file"
    sid = node_step(e.path)
    if sid is None:
        return f"tree entry {e.path!r} is not a node of the layout cold_nodes/step_NNNNNN.json"
    if not 1 <= sid <= STEP_MAX:
        return f"tree entry {e.path!r} names no valid step id"
    if e.size is None:
        return f"git reports no size for {e.path!r}"
    return None


def node_step(path: str) -> int | None:
    """The step id of a tree path ``cold_nodes/step_NNNNNN.json``; None for any other path."""
    directory, _, name = path.partition("/")
    return step_of_name(name) if directory == NODES_DIR else None


def check_tree(session: str, entries: list[gitstate.TreeEntry]) -> dict[int, gitstate.TreeEntry]:
    """Step id → entry, after refusing any hostile entry and any oversize object or total."""
    out: dict[int, gitstate.TreeEntry] = {}
    limit, node_limit, total = max_bytes(), max_node_bytes(), 0
    for e in entries:
        problem = _entry_problem(e)
        if problem:
            raise _refuse(session, problem)
        sid = node_step(e.path)
        assert sid is not None  # _entry_problem refused any other path
        if sid in out:
            raise _refuse(session, f"tree lists {e.path!r} twice")
        out[sid] = e
        total += e.size or 0
        if total > limit:
            raise _refuse(session, f"{total} bytes ({e.path!r}) exceed the pull limit of {limit} "
                                   f"bytes (no object was read; set {MAX_ENV} to pull more)")  # fmt: skip
        if (e.size or 0) > node_limit:
            raise _refuse(session, f"{e.size} bytes ({e.path!r}) exceed the per-node pull limit "
                                   f"of {node_limit} bytes (no object was read; set "
                                   f"{NODE_MAX_ENV} to pull larger nodes)")  # fmt: skip
    return out


ROOT_TREE_MAX = 4096  # the layout's root tree is one entry (37 bytes); room to name strays
NODES_TREE_MAX = STEP_MAX * 64  # an entry of cold_nodes is 45 bytes


def _check_objects(root: Path, session: str, commit: str, where: str) -> None:
    """``commit`` is a commit, and its trees (objects too) are refused from their sizes before
    ``ls-tree`` would list a tree of millions of entries into memory: one ``cat-file``."""
    trees = {"/": (f"{commit}^{{tree}}", ROOT_TREE_MAX), NODES_DIR: (f"{commit}:{NODES_DIR}", NODES_TREE_MAX)}
    sizes = gitstate.object_sizes(root, [commit, *(rev for rev, _limit in trees.values())])
    if (sizes.get(commit) or ("", 0))[0] != "commit":
        raise _refuse(session, f"{where} is not a commit")
    for name, (rev, limit) in trees.items():
        found = sizes.get(rev)
        if found is not None and found[0] == "tree" and found[1] > limit:
            raise _refuse(session, f"tree {name!r} holds {found[1]} bytes, over the {limit} "
                                   "any cold store needs (nothing listed)")  # fmt: skip


def recorded_identities(layout: StoreLayout) -> dict[int, str]:
    """Step id → artifact_sha256 the local index recorded (empty when there is no index)."""
    if not layout.sqlite.exists():
        return {}
    with idx.opened(layout) as conn:
        return idx.identities(conn)


def _verified(raw: bytes, sid: int, where: str, session: str) -> dict[str, Any]:
    """A node's identities, then its shape: the model the node schema mirrors, strict (no
    coercion), ~70x faster than the JSON Schema validator on real nodes."""
    from pydantic import ValidationError

    from contextfork.cold.models import ColdNode

    node = verify_node(raw, where=where, step_id=sid)
    try:
        ColdNode.model_validate(node, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        at = "/".join(str(p) for p in first["loc"]) or "(root)"
        raise IntegrityError(f"{where}: not a valid cold node ({at}: {first['msg']})") from None
    if node["session_id"] != session:
        raise IntegrityError(f"{where}: belongs to session {node['session_id']!r}, not {session!r}")
    return node


def _conflict(session: str, sid: int, why: str) -> IntegrityError:
    return IntegrityError(
        f"cold session {session}: step {sid} conflicts: {why}; nothing was written",
        hint="step ids are immutable; the two stores folded different steps under one id",
    )


def verify_fetched(root: Path, layout: StoreLayout, commit: str, where: str) -> Incoming:
    """Check and verify a fetched commit against the local store, writing nothing."""
    session = layout.session_id
    _check_objects(root, session, commit, where)
    layout.ensure_contained()
    by_sid = check_tree(session, gitstate.ls_tree_all(root, commit))
    inc = Incoming(session, commit, nodes=len(by_sid), steps=sorted(by_sid))
    local: dict[int, Path] = {}
    for sid in by_sid:
        path = layout.node_path(sid)
        if path.is_symlink():
            raise IntegrityError(f"{path} is a symlink", hint="cold nodes must be plain files")
        if path.exists():
            local[sid] = path
    local_ids = dict(zip(local, gitstate.blob_ids(root, list(local.values())), strict=True))
    recorded = recorded_identities(layout)
    wanted = sorted(s for s, e in by_sid.items() if local_ids.get(s) != e.sha)
    shas = [by_sid[s].sha for s in wanted]
    try:
        # a node is canonical JSON: an object (anything else is refused at its first byte)
        blobs = gitstate.iter_blobs(root, shas, max_node_bytes(), starts_with=b"{")
        with contextlib.closing(blobs):
            for sid, (_sha, raw) in zip(wanted, blobs, strict=True):
                rel = f"{where}:cold_nodes/{step_key(sid)}.json"
                node = _verified(raw, sid, rel, session)
                if sid in local:
                    raise _conflict(session, sid, "the local node file holds other bytes")
                if recorded.get(sid, node["artifact_sha256"]) != node["artifact_sha256"]:
                    raise _conflict(session, sid, "the local index recorded another identity")
                inc.new.append((raw, node))
    except GitError as err:
        raise _refuse(session, err.message) from None
    inc.adopt = sorted(s for s in local if local_ids[s] == by_sid[s].sha and s not in recorded)
    return inc


def _recheck(layout: StoreLayout, inc: Incoming, conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Under the lock: the local store may have changed since verification. Returns the nodes
    to index (new and adopted), refusing a conflict before anything is written."""
    recorded = idx.identities(conn)
    to_index: list[dict[str, Any]] = []
    still_new: list[tuple[bytes, dict[str, Any]]] = []
    for raw, node in inc.new:
        sid, art = int(node["step_id"]), node["artifact_sha256"]
        path = layout.node_path(sid)
        if path.is_symlink() or (path.exists() and path.read_bytes() != raw):
            raise _conflict(inc.session, sid, "the local node file holds other bytes")
        if recorded.get(sid, art) != art:
            raise _conflict(inc.session, sid, "the local index recorded another identity")
        if sid not in recorded:
            to_index.append(node)
        if not path.exists():
            still_new.append((raw, node))
    for sid in inc.adopt:
        if sid not in recorded:
            raw = layout.node_path(sid).read_bytes()
            to_index.append(_verified(raw, sid, f"cold_nodes/{step_key(sid)}.json", inc.session))
    inc.new = still_new
    return sorted(to_index, key=lambda n: int(n["step_id"]))


def publish(layout: StoreLayout, inc: Incoming) -> int:
    """Write the verified nodes and index them in one transaction; the number indexed."""
    from contextfork.cold.store import ensure_policy

    if not inc.new and not inc.adopt:
        return 0
    with store_lock(layout):
        scratch.sweep_stale(layout.dir, (STAGING,))  # what a killed pull left
        policy = ensure_policy(layout)
        with idx.opened(layout) as conn:
            stepkeys.ensure(conn)  # DDL outside the transaction
            to_index = _recheck(layout, inc, conn)
            if inc.new:  # phase 1: node files, flushed together, then each renamed into place
                with atomic.staging_dir(layout.dir, STAGING) as staging:
                    for raw, node in inc.new:
                        atomic.write_into(staging, f"{step_key(int(node['step_id']))}.json", raw)
                    atomic.publish_files(staging, layout.nodes_dir)
            kill_point("cold-pull-between-phases")
            try:
                with idx.transaction(conn):  # phase 2: what makes them readable, at once
                    for node in to_index:
                        idx.add_node(conn, node)
                        stepkeys.record(conn, node)
            except (sqlite3.DatabaseError, ContextforkError) as err:
                raise IntegrityError(f"cold session {inc.session}: indexing failed ({err})") from err
            if to_index:
                idx.export_ipcf_view(conn, layout, policy_sha256(policy))
    return len(to_index)
