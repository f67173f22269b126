"""Whole-store checks: tamper, orphans, broken references, stale index, path containment.

Returns ``Problem`` lists (never stops at the first one). Containment is checked regardless of
any policy setting: a symlinked store, node directory or node file, or a store that resolves
outside ``<repo>/.contextfork/cold`` (including sibling-prefix directories) is an integrity
problem. Integrity problems map to exit code 3, other errors to 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contextfork.cold import index as idx
from contextfork.cold.decisions import FILE_NAME, load_for_store
from contextfork.cold.evict import load_log, load_turn
from contextfork.cold.layout import StoreLayout, policy_sha256, step_of_name
from contextfork.cold.node import verify_node
from contextfork.cold.rebuild import node_names
from contextfork.cold.store import load_policy
from contextfork.envelope import Problem
from contextfork.errors import ContextforkError, ExitCode, IntegrityError
from contextfork.hashing import sha256_file
from contextfork.paths import contained
from contextfork.resources import validate_against_schema

VIEW_PARSE_MAX = 16 << 20  # a mismatched view larger than this is reported, not parsed
INTEGRITY_CODES = frozenset({"tampered", "containment", "symlink", "index_mismatch", "malformed"})


def _err(code: str, message: str, path: str | None = None) -> Problem:
    return Problem("error", code, message, path)


def _schema(name: str, data: Any, path: str) -> list[Problem]:
    return [_err("schema", f"{name}: {m}", path) for m in validate_against_schema(name, data)[:5]]


def _slim(node: dict[str, Any]) -> dict[str, Any]:
    """What the whole-store checks need of a node; content is never kept (100k nodes)."""
    return {k: node[k] for k in ("step_id", "artifact_sha256", "intents", "refs", "policy_sha256")}


def check_nodes(layout: StoreLayout) -> tuple[list[Problem], dict[int, dict[str, Any]]]:
    """Verify every node file, one at a time; returns slim records (see ``_slim``)."""
    problems: list[Problem] = []
    nodes: dict[int, dict[str, Any]] = {}
    # A node file that is not a symlink, in a node directory inside the store, is inside the
    # store: resolve the directory once, not each of 100k files (two realpaths per node).
    dir_contained = contained(layout.dir, layout.nodes_dir)
    base = str(layout.nodes_dir)  # plain strings: a Path per node was a tenth of the CPU
    for name in node_names(layout):
        path = os.path.join(base, name)
        rel = f"cold_nodes/{name}"
        sid = step_of_name(name)
        if os.path.islink(path):
            problems.append(_err("symlink", "node file is a symlink (may escape the store)", rel))
            continue
        if sid is None:
            problems.append(Problem("warning", "stray_file", "not a cold node file name", rel))
            continue
        if not (dir_contained or contained(layout.dir, Path(path))):
            problems.append(_err("containment", "node file resolves outside the store", rel))
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            node = verify_node(data, where=rel, step_id=sid)
        except IntegrityError as err:
            problems.append(_err("tampered", err.message, rel))
            continue
        problems.extend(_schema("cold-node.schema.json", node, rel))
        if node["session_id"] != layout.session_id:
            problems.append(_err("foreign_node", f"node belongs to session {node['session_id']!r}", rel))
        nodes[int(node["step_id"])] = _slim(node)
    return problems, nodes


def check_index(layout: StoreLayout, nodes: dict[int, dict[str, Any]], policy: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    if not layout.sqlite.exists():
        if nodes:
            problems.append(_err("missing_index", "index.sqlite3 is missing", "index.sqlite3"))
        return problems
    with idx.opened(layout) as conn:
        rows = {int(r[0]): (r[1], r[2]) for r in conn.execute(
            "SELECT step_id, artifact_sha256, superseded_by FROM nodes")}
        for sid in sorted(set(rows) - set(nodes)):
            problems.append(_err("missing_node", f"index lists step {sid} but its node file is missing or invalid",
                                 f"cold_nodes/step_{sid:06d}.json"))
        for sid in sorted(set(nodes) - set(rows)):
            problems.append(_err("orphan_node", f"step {sid} is stored but not indexed (run `fold index`)",
                                 f"cold_nodes/step_{sid:06d}.json"))
        owners: dict[str, int] = {}
        for sid, node in nodes.items():
            for intent in node["intents"]:
                owners[intent] = max(owners.get(intent, 0), sid)
        for sid in sorted(set(rows) & set(nodes)):
            art, sup = rows[sid]
            if art != nodes[sid]["artifact_sha256"]:
                problems.append(_err("index_mismatch", f"index and node file disagree on step {sid}",
                                     f"cold_nodes/step_{sid:06d}.json"))
            expect = max((owners[i] for i in nodes[sid]["intents"] if owners[i] > sid), default=None)
            if sup != expect:
                problems.append(_err("stale_supersession",
                                     f"step {sid}: index says superseded_by={sup}, nodes say {expect}"))
        if layout.recall_index.exists():
            problems.extend(_check_view(conn, layout, policy))
    return problems


def _check_view(conn: Any, layout: StoreLayout, policy: dict[str, Any]) -> list[Problem]:
    """recall_index.json against the index, compared as streamed bytes (flat memory): a fresh
    view must be byte for byte what the index exports. A file that is not is also parsed and
    schema-checked, when it is small enough to read whole."""
    rel = "recall_index.json"
    fresh = idx.view_fresh(conn)
    try:
        on_disk, size = sha256_file(layout.recall_index)
    except OSError as err:
        return [_err("malformed", f"recall_index.json unreadable: {err}", rel)]
    if fresh and on_disk == idx.view_sha256(conn, layout, policy_sha256(policy)):
        return []
    problems: list[Problem] = []
    if size <= VIEW_PARSE_MAX:
        try:
            data = json.loads(layout.recall_index.read_bytes())
        except (OSError, json.JSONDecodeError) as err:
            return [_err("malformed", f"recall_index.json unreadable: {err}", rel)]
        problems.extend(_schema("recall-index.schema.json", data, rel))
    if fresh:
        problems.append(_err("view_mismatch", "recall_index.json differs from the index", rel))
    else:
        problems.append(Problem("info", "view_stale",
                                "recall_index.json predates the latest folds (run `fold index`)", rel))
    return problems


def _curation(layout: StoreLayout) -> list[Problem]:
    """The agent's decisions beside the store (curation.json): render, fork and page-in refuse a
    damaged one, so validate names it too."""
    try:
        load_for_store(layout.dir)
    except IntegrityError as err:
        return [_err("malformed", err.one_line(), FILE_NAME)]
    return []


def check_refs(layout: StoreLayout, nodes: dict[int, dict[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    for sid, node in sorted(nodes.items()):
        for ref in node["refs"]:
            if ref not in nodes:
                problems.append(_err("broken_reference", f"step {sid} cites step {ref}, which is not stored",
                                     f"cold_nodes/step_{sid:06d}.json"))
    try:
        state = load_turn(layout)
        log = load_log(layout)
    except IntegrityError as err:
        return [*problems, *_curation(layout), _err("malformed", err.one_line())]
    problems.extend(_curation(layout))
    for h in state.get("hydrated", []):
        if int(h["step_id"]) not in nodes:
            problems.append(_err("broken_reference", f"turn state pages in missing step {h['step_id']}",
                                 "turn_state.json"))
    if layout.eviction_log.exists():
        problems.extend(_schema("eviction-log.schema.json", log, "eviction_log.json"))
    return problems


def validate_store(layout: StoreLayout) -> list[Problem]:
    problems = [_err("containment", p) for p in layout.containment_problems()]
    if problems:
        return problems
    if not layout.dir.exists():
        return [Problem("error", "not_found", f"no cold store for session {layout.session_id!r}")]
    try:
        policy = load_policy(layout)
    except ContextforkError as err:
        return [_err("malformed", err.one_line(), "hydration_policy.json")]
    if layout.policy_file.exists():
        problems.extend(_schema("hydration-policy.schema.json", policy, "hydration_policy.json"))
    node_problems, nodes = check_nodes(layout)
    problems.extend(node_problems)
    current = policy_sha256(policy)
    stale = [s for s, n in nodes.items() if n["policy_sha256"] != current]
    if stale:
        problems.append(Problem("warning", "policy_changed",
                                f"{len(stale)} node(s) were folded under another page-in policy"))
    try:
        problems.extend(check_index(layout, nodes, policy))
    except idx.UnreadableIndex as err:
        problems.append(_err("malformed", err.one_line(), "index.sqlite3"))
    problems.extend(check_refs(layout, nodes))
    return problems


def exit_code_for(problems: list[Problem]) -> int:
    errors = [p for p in problems if p.severity == "error"]
    if any(p.code in INTEGRITY_CODES for p in errors):
        return int(ExitCode.INTEGRITY)
    if any(p.code == "not_found" for p in errors):
        return int(ExitCode.NOT_FOUND)
    return int(ExitCode.CHECK_FAILED) if errors else 0
