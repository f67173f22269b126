"""The inverted index page-in uses: sqlite3 (stdlib), so lookups follow the prompt's terms.

A page-in reads the vocabulary range and the postings of the prompt's few terms, never every node;
a fold inserts one node's rows in one transaction instead of rewriting a whole JSON index, so
its cost (and memory) stays flat as the store grows. The IPCF ``recall_index.json`` is a view
exported from here (``export_ipcf_view``): automatically after each fold while the store has at
most ``AUTO_VIEW_MAX_NODES`` nodes, and otherwise by ``contextfork fold index`` and at the end
of ``fold session``. The index is derived data: ``rebuild`` recreates it from the node files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from contextfork.atomic import move_aside, write_chunks
from contextfork.cold.identifiers import PREFIX_MAX_EXTRA, prefix_eligible, shorter_partners
from contextfork.cold.layout import IPCF_VERSION, StoreLayout, step_key
from contextfork.errors import CheckFailed, ContextforkError, IntegrityError
from contextfork.layout import ensure_for_store

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
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, content='', tokenize='porter unicode61');
"""


REBUILD_HINT = "rebuild it from the verified node files: `contextfork fold index --rebuild`"


class UnreadableIndex(IntegrityError):
    """index.sqlite3 is not a database we can read (garbage, truncated, a flipped byte)."""


class IndexUnavailable(CheckFailed):
    """SQLite could not use a sound index now (locked past the timeout, disk full, I/O error,
    no permission): not damage, so no rebuild is suggested."""


# SQLite result codes (the low byte of an extended code) that say nothing about the file's
# content: SQLITE_PERM, BUSY, LOCKED, NOMEM, READONLY, INTERRUPT, IOERR, FULL, CANTOPEN, AUTH.
_NOT_DAMAGE = frozenset({3, 5, 6, 7, 8, 9, 10, 13, 14, 23})

# The types every column of the schema may hold (the row factory checks each value read): a
# flipped byte in a record header hands back text, a blob or NULL where an integer was stored.
_INT: tuple[type, ...] = (int,)
_TEXT: tuple[type, ...] = (str,)
_COLUMN_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("step_id", "token_count", "summary_token_count", "df", "open", "rowid"), _INT),
    **dict.fromkeys(("artifact_sha256", "payload_sha256", "projection_sha256", "summary", "refs",
                     "intents", "term", "intent", "value"), _TEXT),
    "superseded_by": (int, type(None)),
    "key": (str, type(None)),
}  # fmt: skip
# (description, usual types, plan) of the last query seen: rows of one query share their
# cursor's description object, so the plan is built once per query, not per row; a row whose
# types are the usual ones (every column checked, none NULL) costs one tuple comparison.
_last_plan: tuple[object, tuple[type, ...] | None, tuple[tuple[int, tuple[type, ...]], ...]] = (
    (), None, ())


def _typed_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each value of a schema column has a type the schema allows, else the index is damaged
    (``sqlite3.DatabaseError``, which ``opened`` reports as ``UnreadableIndex``)."""
    global _last_plan
    desc = cursor.description
    seen, usual, plan = _last_plan
    if desc is not seen:
        plan = tuple((i, _COLUMN_TYPES[d[0]]) for i, d in enumerate(desc) if d[0] in _COLUMN_TYPES)
        usual = tuple(t[0] for _, t in plan) if len(plan) == len(desc) else None
        _last_plan = (desc, usual, plan)
    if usual is not None and tuple(map(type, row)) == usual:
        return row
    for i, allowed in plan:
        if type(row[i]) not in allowed:
            raise sqlite3.DatabaseError(
                f"column {desc[i][0]} holds {type(row[i]).__name__} where "
                f"{allowed[0].__name__} belongs")
    return row


def _json_list(text: str) -> list[Any]:
    """A JSON list column (refs, intents); anything else is a damaged row."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise sqlite3.DatabaseError("a JSON column is not JSON") from None
    if not isinstance(value, list):
        raise sqlite3.DatabaseError("a JSON list column holds something else")
    return value


def failure(layout: StoreLayout, err: BaseException) -> ContextforkError:
    """One line for an error SQLite (or its text) raised while this store's index was used."""
    code = _primary(err)
    where = f"{layout.sqlite.name} of cold store {layout.session_id!r}"
    if code in _NOT_DAMAGE and not _readonly_by_content(layout, code):
        return IndexUnavailable(f"{where} cannot be used now ({_clean(err)})",
                                hint="try again; check free space and permissions")  # fmt: skip
    reason = "it holds text that is not UTF-8" if isinstance(err, UnicodeDecodeError) else _clean(err)
    return UnreadableIndex(f"{where} is damaged ({reason})", hint=REBUILD_HINT)


def _readonly_by_content(layout: StoreLayout, code: int | None) -> bool:
    """SQLITE_READONLY on a file and directory we may write: the header's write-version byte
    says the file is from a format we must not write, i.e. damage."""
    return code == 8 and os.access(layout.sqlite, os.W_OK) and os.access(layout.dir, os.W_OK)


def _clean(err: BaseException) -> str:
    """SQLite's message without control characters (it can quote damaged bytes), kept short."""
    text = "".join(c if c.isprintable() else "?" for c in str(err)) or type(err).__name__
    return text if len(text) <= 160 else text[:157] + "..."


#: SQLite's page cache per connection (its default is 2 MiB): a fold of a 55 MB session over a
#: store it folded before filled it and went past 2 bytes of memory per transcript byte.
CACHE_KIB = 256
BUSY_SECONDS = 30  # how long a writer waits for another (SQLite's busy timeout), and set-up


def connect(layout: StoreLayout) -> sqlite3.Connection:
    ensure_for_store(layout.root)
    layout.dir.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(layout.sqlite, timeout=BUSY_SECONDS, isolation_level=None)
    except sqlite3.DatabaseError as err:
        raise failure(layout, err) from None
    conn.row_factory = _typed_row
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            conn.executescript(_SCHEMA)
            conn.execute("SELECT step_id, artifact_sha256 FROM nodes LIMIT 1").fetchall()
            return conn
        except sqlite3.OperationalError as err:
            if _busy(err) and time.monotonic() < deadline:
                time.sleep(0.005 + time.perf_counter_ns() % 20_000_000 / 1e9)  # 5-25 ms, jittered
                continue
            conn.close()
            raise failure(layout, err) from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:  # a message can quote damaged bytes
            conn.close()
            raise failure(layout, err) from None


def _busy(err: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (any extended code). While a new index is being set up by
    several processes at once (WAL mode, schema), SQLite refuses some of them at once instead
    of waiting (it would deadlock): those try again, up to the busy timeout."""
    return _primary(err) in (5, 6)


def _primary(err: BaseException) -> int | None:
    """SQLite's primary result code of ``err`` (its extended code's low byte), if it has one."""
    code = getattr(err, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def discard(layout: StoreLayout) -> Path | None:
    """Move an unreadable index (and its WAL files) aside; the index is derived data."""
    if not layout.sqlite.exists():
        return None
    aside = move_aside(layout.sqlite, ".corrupt")
    for extra in ("-wal", "-shm"):
        side = Path(str(layout.sqlite) + extra)
        if side.exists():
            move_aside(side, ".corrupt")
    return aside


@contextmanager
def opened(layout: StoreLayout) -> Iterator[sqlite3.Connection]:
    """The store's index for the body's reads and writes. Damage found anywhere in the body
    (a page, a row, a text column; SQLite finds most of it only when it reads there) is one
    ``UnreadableIndex`` line, exit 3: never a traceback, and never a silent rebuild, because
    the index holds what no node file can vouch for (each step's identity at fold time)."""
    with closing(connect(layout)) as conn:
        try:
            yield conn
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            if isinstance(err, sqlite3.ProgrammingError):
                raise  # our misuse, not the file's: a bug to report, not damage to repair
            raise failure(layout, err) from None


def check_pages(conn: sqlite3.Connection) -> None:
    """SQLite's own structural check of every page (``PRAGMA quick_check``, O(file size):
    for ``fold index --rebuild``, not for reads). Damage is ``sqlite3.DatabaseError``."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError(f"quick_check: {str(rows[0][0]) if rows else 'no answer'}")


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
            int(node.get("readable_token_count", node["token_count"])),  # what page-in injects
            int(node["summary_token_count"]),
            node["summary"],
            json.dumps(node["refs"]),
            json.dumps(node["intents"]),
        ),
    )
    terms = sorted(set(node.get("index_terms", node["identifiers"])))
    conn.executemany("INSERT OR IGNORE INTO postings VALUES (?,?)", [(t, sid) for t in terms])
    # Ranked recall (bm25) reads the words of what page-in would show; contentless, so the
    # text is not stored twice.
    body = node.get("readable") or (node["content"] if node.get("content_encoding") == "utf-8" else "")
    conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (sid, f"{node['summary']}\n{body}"))
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


def identities(conn: sqlite3.Connection) -> dict[int, str]:
    """Step id → artifact_sha256 of every indexed node (what a step's content was recorded as)."""
    return {int(r[0]): str(r[1]) for r in conn.execute("SELECT step_id, artifact_sha256 FROM nodes")}


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
                "refs": _json_list(r[4]),
                "intents": _json_list(r[5]),
                "superseded_by": r[6],
                "artifact_sha256": r[7],
            }
    return out


def all_steps(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT step_id FROM nodes ORDER BY step_id")]


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _member(key: str, value: Any, depth: int) -> str:
    """One ``"key": value`` line of a pretty JSON object at ``depth``, as ``json.dumps`` with
    indent=2 would print it inside the whole document."""
    pad = "  " * depth
    return pad + json.dumps(key, ensure_ascii=False) + ": " + _dumps(value).replace("\n", "\n" + pad)


def _object(key: str, members: Iterator[str], depth: int) -> Iterator[str]:
    """A nested object whose members are produced one at a time (never all in memory)."""
    pad = "  " * depth
    first = next(members, None)
    if first is None:
        yield f"{pad}{json.dumps(key, ensure_ascii=False)}: {{}}"
        return
    yield f"{pad}{json.dumps(key, ensure_ascii=False)}: {{\n{first}"
    for m in members:
        yield ",\n" + m
    yield f"\n{pad}}}"


def _node_members(conn: sqlite3.Connection) -> Iterator[str]:
    for r in conn.execute(
        "SELECT step_id, summary, token_count, refs, intents, superseded_by, payload_sha256, "
        "projection_sha256, artifact_sha256 FROM nodes ORDER BY step_id"
    ):
        sid = int(r[0])
        yield _member(step_key(sid), {
            "step_id": sid, "summary": r[1], "token_count": int(r[2]), "refs": _json_list(r[3]),
            "intents": _json_list(r[4]), "superseded_by": r[5], "payload_sha256": r[6],
            "projection_sha256": r[7], "artifact_sha256": r[8],
            "path": f"cold_nodes/{step_key(sid)}.json",
        }, 2)  # fmt: skip


def _grouped(rows: Iterable[tuple[str, int]]) -> Iterator[tuple[str, list[int]]]:
    """(key, [step ids]) from rows already ordered by key, step id. The types are checked here,
    inline (these are the index's longest scans: a row factory call per row cost ~1 µs)."""
    key: str | None = None
    steps: list[int] = []
    for k, sid in rows:
        if type(k) is not str or type(sid) is not int:
            raise sqlite3.DatabaseError(f"a row holds {type(k).__name__}, {type(sid).__name__} "
                                        "where text, integer belong")  # fmt: skip
        if k != key:
            if key is not None:
                yield key, steps
            key, steps = k, []
        steps.append(sid)
    if key is not None:
        yield key, steps


def _plain(conn: sqlite3.Connection, sql: str) -> sqlite3.Cursor:
    """A cursor without the checking row factory (its caller checks the types itself)."""
    cur = conn.cursor()
    cur.row_factory = None
    return cur.execute(sql)


def _term_members(conn: sqlite3.Connection) -> Iterator[str]:
    rows = _plain(conn, "SELECT term, step_id FROM postings ORDER BY term, step_id")
    for term, steps in _grouped(rows):
        yield _member(term, steps, 2)


def _intent_members(conn: sqlite3.Connection) -> Iterator[str]:
    rows = _plain(conn, "SELECT intent, step_id FROM intents ORDER BY intent, step_id")
    for intent, steps in _grouped(rows):
        yield _member(intent, {"steps": steps, "owner": steps[-1]}, 2)


def ipcf_view_chunks(
    conn: sqlite3.Connection, layout: StoreLayout, policy_sha256: str
) -> Iterator[bytes]:
    """The IPCF recall index as the bytes ``dump_json_bytes`` gives for the whole view (fully
    sorted, so the same nodes give the same bytes in any fold order), produced row by row:
    memory stays flat however many nodes the store holds."""
    count = node_count(conn)
    parts: list[Iterator[str]] = [  # one per top-level member, in sorted key order
        iter([_member("index_version", INDEX_VERSION, 1)]),
        _object("intents", _intent_members(conn), 1),
        iter([_member("ipcf_version", IPCF_VERSION, 1)]),
        iter([_member("node_count", count, 1)]),
        _object("nodes", _node_members(conn), 1),
        iter([_member("policy_sha256", policy_sha256, 1)]),
        iter([_member("session_id", layout.session_id, 1)]),
        _object("terms", _term_members(conn), 1),
    ]
    yield b"{\n"
    for i, part in enumerate(parts):
        buf: list[str] = [",\n"] if i else []
        size = 0
        for piece in part:
            buf.append(piece)
            size += len(piece)
            if size > 1 << 16:
                yield "".join(buf).encode("utf-8")
                buf, size = [], 0
        if buf:
            yield "".join(buf).encode("utf-8")
    yield b"\n}\n"


def view_sha256(conn: sqlite3.Connection, layout: StoreLayout, policy_sha256: str) -> str:
    from contextfork.hashing import sha256_chunks

    return sha256_chunks(ipcf_view_chunks(conn, layout, policy_sha256))


def export_ipcf_view(conn: sqlite3.Connection, layout: StoreLayout, policy_sha256: str) -> Path:
    write_chunks(layout.recall_index, ipcf_view_chunks(conn, layout, policy_sha256))
    conn.execute("INSERT INTO meta VALUES ('ipcf_view_fresh','1') "
                 "ON CONFLICT(key) DO UPDATE SET value='1'")
    return layout.recall_index


def view_fresh(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key='ipcf_view_fresh'").fetchone()
    return row is not None and row[0] == "1"


def clear(conn: sqlite3.Connection) -> None:
    for table in ("nodes", "terms", "postings", "intents"):
        conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
    conn.execute("INSERT INTO fts(fts) VALUES('delete-all')")


def bm25_ranked(conn: sqlite3.Connection, terms: list[str], limit: int = 200) -> dict[int, float]:
    """bm25 score per step (lower is better, as SQLite reports it) for any of ``terms``."""
    phrases = [t.replace('"', '""') for t in terms if t.strip()]
    if not phrases:
        return {}
    query = " OR ".join(f'"{p}"' for p in phrases)
    try:
        rows = conn.execute(
            "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
            (query, limit),
        ).fetchall()
    except sqlite3.OperationalError:  # a query FTS5 cannot parse ranks nothing
        return {}
    return {int(r[0]): float(r[1]) for r in rows}
