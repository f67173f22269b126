"""``fold index``: recreate index.sqlite3 and recall_index.json from the verified node files.

The index is derived data, but it also holds the one thing a node file cannot vouch for itself:
the identity (artifact_sha256) each step had when it was folded. So a plain ``fold index`` keeps
that record: a node file whose identity differs from it is not indexed (it was rewritten and
re-hashed), so the whole rebuild is refused and nothing changes; so is a step the index lists
whose node file is gone (dropping its entry would hide the loss); a node file the index does
not list (a fold interrupted between its two phases) is added. ``--rebuild`` discards the old index entirely (it is unreadable, or the user trusts the
node files as they are now); an unreadable index is moved aside as ``index.sqlite3.corrupt``.

Node files are read and verified one at a time inside one transaction, and the IPCF view is
streamed, so memory stays flat however many nodes the store holds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold import stepkeys
from contextfork.cold.layout import StoreLayout, policy_sha256, step_of_name, store_lock
from contextfork.cold.node import verify_node
from contextfork.errors import ContextforkError, IntegrityError


@dataclass
class Rebuilt:
    nodes: int = 0
    skipped: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    discarded: str | None = None  # where an unreadable index was moved


def node_names(layout: StoreLayout) -> list[str]:
    """Node file names in step order (plain strings: cheap at 100k nodes)."""
    if not layout.nodes_dir.is_dir():
        return []
    with os.scandir(layout.nodes_dir) as it:
        return sorted(e.name for e in it if not e.name.startswith("."))


def rebuild(layout: StoreLayout, *, discard_old: bool) -> Rebuilt:
    from contextfork.cold.store import ensure_policy

    out = Rebuilt()
    with store_lock(layout):
        policy = ensure_policy(layout)
        recorded: dict[int, str] = {}
        try:
            with idx.opened(layout) as conn:
                if not discard_old:
                    recorded = idx.identities(conn)
                else:
                    idx.check_pages(conn)  # damage the clear below would trip over
        except idx.UnreadableIndex:
            if not discard_old:
                raise
            out.discarded = _discard(layout)
        try:
            _fill(layout, out, recorded, policy)
        except idx.UnreadableIndex:
            # --rebuild: damage SQLite found only while clearing (a page quick_check passed);
            # the transaction rolled back, so start once more from an empty file.
            if not discard_old or out.discarded is not None:
                raise
            out.discarded = _discard(layout)
            out.skipped.clear()
            _fill(layout, out, recorded, policy)
    return out


def _discard(layout: StoreLayout) -> str:
    aside = idx.discard(layout)
    return str(aside) if aside else ""


def _fill(layout: StoreLayout, out: Rebuilt, recorded: dict[int, str], policy: dict[str, Any]) -> None:
    """Clear the index and add every verified node file, in one transaction."""
    with idx.opened(layout) as conn:
        stepkeys.ensure(conn)  # DDL outside the transaction
        with idx.transaction(conn):
            idx.clear(conn)
            seen: set[int] = set()  # steps with a node file, verified or not
            for name in node_names(layout):
                path = layout.nodes_dir / name
                sid = step_of_name(name)
                if sid is not None:
                    seen.add(sid)
                if path.is_symlink() or sid is None:
                    out.skipped.append(name)
                    continue
                try:
                    node = verify_node(path.read_bytes(), where=name,
                                       step_id=sid)  # fmt: skip
                except (ContextforkError, ValueError, OSError):
                    out.skipped.append(name)
                    continue
                was = recorded.get(int(node["step_id"]))
                if was is not None and was != node["artifact_sha256"]:
                    out.mismatched.append(name)
                    continue
                idx.add_node(conn, node)
                stepkeys.record(conn, node)  # version chains survive a rebuild
            if out.mismatched:  # rolls the whole transaction back: nothing changes
                raise IntegrityError(
                    f"{len(out.mismatched)} node file(s) differ from the identity the index "
                    f"recorded at fold time (rewritten and re-hashed): {_shown(out.mismatched)}; "
                    "nothing rebuilt",
                    hint="`contextfork fold index --rebuild` trusts the node files as they are now",
                )
            lost = sorted(set(recorded) - seen)
            if lost:  # a node file the index recorded is gone: dropping its entry hides the loss
                raise IntegrityError(
                    f"{len(lost)} node file(s) the index recorded are missing: "
                    f"{_shown([f'step_{s:06d}.json' for s in lost])}; nothing rebuilt",
                    hint="`contextfork fold index --rebuild` drops them from the index",
                )
        out.nodes = idx.node_count(conn)
        idx.export_ipcf_view(conn, layout, policy_sha256(policy))


def _shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
