"""The inverted index scans use: sqlite3 (stdlib), so lookups follow the prompt's terms.

A scan reads the vocabulary range and the postings of the prompt's few terms, never every node;
a fold inserts one node's rows in one transaction instead of rewriting a whole JSON index, so
its cost (and memory) stays flat as the store grows. The IPCF ``recall_index.json`` is a view
exported from here (``export_ipcf_view``): automatically after each fold while the store has at
most ``AUTO_VIEW_MAX_NODES`` nodes, and otherwise by ``contextfork fold index`` and at the end
of ``fold session``. The index is derived data: ``rebuild`` recreates it from the node files.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from contextfork.atomic import dump_json_bytes, write_bytes
from contextfork.cold.identifiers import PREFIX_MAX_EXTRA, prefix_eligible, shorter_partners
from contextfork.cold.layout import IPCF_VERSION, StoreLayout, step_key
from contextfork.statedir import ensure_for_store

INDEX_VERSION = 1
AUTO_VIEW_MAX_NODES = 512

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes(
  step_id INTEGER PRIMARY KEY,
  artifact_sha256 TEXT NOT NULL,
  payload_sha256 TEXT NOT NULL,
  projection_sha256 TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  summary_token_count INTEGER NOT NULL,
  summary TEXT NOT NULL,
  refs TEXT NOT NULL,
  intents TEXT NOT NULL,
  superseded_by INTEGER
);
CREATE TABLE IF NOT EXISTS terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS postings(term TEXT NOT NULL, step_id INTEGER NOT NULL,
  PRIMARY KEY(term, step_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS intents(intent TEXT NOT NULL, step_id INTEGER NOT NULL,
  PRIMARY KEY(intent, step_id)) WITHOUT ROWID;
"""


def connect(layout: StoreLayout) -> sqlite3.Connection:
    ensure_for_store(layout.root)
    layout.dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(layout.sqlite, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(_SCHEMA)
    return conn


@contextmanager
def opened(layout: StoreLayout) -> Iterator[sqlite3.Connection]:
    with closing(connect(layout)) as conn:
        yield conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def has_node(conn: sqlite3.Connection, step_id: int) -> str | None:
    row = conn.execute("SELECT artifact_sha256 FROM nodes WHERE step_id=?", (step_id,)).fetchone()
    return None if row is None else str(row[0])


def add_node(conn: sqlite3.Connection, node: dict[str, Any]) -> None:
    """Insert one node's rows (caller holds a transaction) and update intent ownership."""
    sid = int(node["step_id"])
    conn.execute(
        "INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,NULL)",
        (
            sid,
            node["artifact_sha256"],
            node["payload_sha256"],
            node["projection_sha256"],
            int(node["token_count"]),
            int(node["summary_token_count"]),
            node["summary"],
            json.dumps(node["refs"]),
            json.dumps(node["intents"]),
        ),
    )
    terms = sorted(set(node.get("index_terms", node["identifiers"])))
    conn.executemany("INSERT OR IGNORE INTO postings VALUES (?,?)", [(t, sid) for t in terms])
    conn.executemany(
        "INSERT INTO terms VALUES (?,1) ON CONFLICT(term) DO UPDATE SET df=df+1", [(t,) for t in terms]
    )
    for intent in node["intents"]:
        conn.execute("INSERT OR IGNORE INTO intents VALUES (?,?)", (intent, sid))
        owner = conn.execute("SELECT MAX(step_id) FROM intents WHERE intent=?", (intent,)).fetchone()[0]
        conn.execute(
            "UPDATE nodes SET superseded_by=? WHERE step_id IN "
            "(SELECT step_id FROM intents WHERE intent=? AND step_id<?) "
            "AND (superseded_by IS NULL OR superseded_by<?)",
            (owner, intent, owner, owner),
        )
    conn.execute("INSERT INTO meta VALUES ('ipcf_view_fresh','0') "
                 "ON CONFLICT(key) DO UPDATE SET value='0'")


def node_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])


def at_most(conn: sqlite3.Connection, limit: int) -> bool:
    """True when the index holds at most ``limit`` nodes, in O(limit) rather than O(store)."""
    row = conn.execute("SELECT 1 FROM nodes LIMIT 1 OFFSET ?", (limit,)).fetchone()
    return row is None


def expand_term(conn: sqlite3.Connection, term: str) -> list[str]:
    """The index terms a prompt term matches: itself plus safe prefix partners present."""
    out = [term]
    if prefix_eligible(term):
        rows = conn.execute(
            "SELECT term FROM terms WHERE term > ? AND term < ? AND length(term) <= ?",
            (term, term + "\U0010ffff", len(term) + PREFIX_MAX_EXTRA),
        ).fetchall()
        out.extend(r[0] for r in rows if str(r[0]).isalpha())
        for short in shorter_partners(term):
            if conn.execute("SELECT 1 FROM terms WHERE term=?", (short,)).fetchone():
                out.append(short)
    return out


def postings_for(conn: sqlite3.Connection, terms: Iterable[str]) -> set[int]:
    steps: set[int] = set()
    for t in terms:
        steps.update(r[0] for r in conn.execute("SELECT step_id FROM postings WHERE term=?", (t,)))
    return steps


def node_rows(conn: sqlite3.Connection, steps: Iterable[int]) -> dict[int, dict[str, Any]]:
    ids = sorted(set(steps))
    out: dict[int, dict[str, Any]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        q = ",".join("?" * len(chunk))
        cols = "step_id, token_count, summary_token_count, summary, refs, intents, superseded_by, artifact_sha256"
        sql = f"SELECT {cols} FROM nodes WHERE step_id IN ({q})"  # noqa: S608 - "?" placeholders only
        for r in conn.execute(sql, chunk):
            out[int(r[0])] = {
                "step_id": int(r[0]),
                "token_count": int(r[1]),
                "summary_token_count": int(r[2]),
                "summary": r[3],
                "refs": json.loads(r[4]),
                "intents": json.loads(r[5]),
                "superseded_by": r[6],
                "artifact_sha256": r[7],
            }
    return out


def superseded_among(conn: sqlite3.Connection, steps: Iterable[int]) -> dict[int, int]:
    rows = node_rows(conn, steps)
    return {s: int(r["superseded_by"]) for s, r in rows.items() if r["superseded_by"] is not None}


def all_steps(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT step_id FROM nodes ORDER BY step_id")]


def ipcf_view(conn: sqlite3.Connection, layout: StoreLayout, policy_sha256: str) -> dict[str, Any]:
    """The IPCF recall index, fully sorted so the same nodes give the same bytes in any order."""
    nodes: dict[str, Any] = {}
    for r in conn.execute(
        "SELECT step_id, summary, token_count, refs, intents, superseded_by, payload_sha256, "
        "projection_sha256, artifact_sha256 FROM nodes ORDER BY step_id"
    ):
        nodes[step_key(int(r[0]))] = {
            "step_id": int(r[0]),
            "summary": r[1],
            "token_count": int(r[2]),
            "refs": json.loads(r[3]),
            "intents": json.loads(r[4]),
            "superseded_by": r[5],
            "payload_sha256": r[6],
            "projection_sha256": r[7],
            "artifact_sha256": r[8],
            "path": f"cold_nodes/{step_key(int(r[0]))}.json",
        }
    terms: dict[str, list[int]] = {}
    for term, sid in conn.execute("SELECT term, step_id FROM postings ORDER BY term, step_id"):
        terms.setdefault(term, []).append(int(sid))
    intents: dict[str, dict[str, Any]] = {}
    for intent, sid in conn.execute("SELECT intent, step_id FROM intents ORDER BY intent, step_id"):
        entry = intents.setdefault(intent, {"steps": [], "owner": None})
        entry["steps"].append(int(sid))
        entry["owner"] = int(sid)
    return {
        "ipcf_version": IPCF_VERSION,
        "index_version": INDEX_VERSION,
        "session_id": layout.session_id,
        "policy_sha256": policy_sha256,
        "node_count": len(nodes),
        "nodes": nodes,
        "terms": terms,
        "intents": intents,
    }


def export_ipcf_view(conn: sqlite3.Connection, layout: StoreLayout, policy_sha256: str) -> Path:
    write_bytes(layout.recall_index, dump_json_bytes(ipcf_view(conn, layout, policy_sha256)))
    conn.execute("INSERT INTO meta VALUES ('ipcf_view_fresh','1') "
                 "ON CONFLICT(key) DO UPDATE SET value='1'")
    return layout.recall_index


def view_fresh(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key='ipcf_view_fresh'").fetchone()
    return row is not None and row[0] == "1"


def clear(conn: sqlite3.Connection) -> None:
    for table in ("nodes", "terms", "postings", "intents"):
        conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
