"""The agent's durable curation decisions for one session, verified on every load.

Decisions live beside the session's cold store, ``.contextfork/cold/<session>/curation.json``
(named through ``contextfork.layout.state_path``), written atomically and carrying the SHA-256
of their own canonical JSON: a file edited by hand or torn by a crash is an ``IntegrityError``
(exit 3), never a silently different render.

They are keyed by stable step keys (``Step.identity``: the harness's own id of the step, or
``index:N`` where the adapter had none), never by positions, so a pin or a brief still means
the same step after a compaction renumbered the view or a refold re-rendered it.

This module is stdlib + hashing only (no pydantic): the renderer, ``fork`` and the page-in
hook read decisions on paths that must stay lean. It sits in ``cold`` (below ``render`` and
``contextfork.curate``, which edits the decisions); the pydantic model in ``curate.models``
describes the same file for the JSON Schema and the tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.cold.layout import CURATION_FILE
from contextfork.errors import IntegrityError
from contextfork.hashing import canonical_sha256
from contextfork.layout import state_path
from contextfork.sessionids import check_session_id

FORMAT = "contextfork-curation"
VERSION = 1
FILE_NAME = CURATION_FILE
#: The longest brief the agent may write (the renderer shows it in place of a fold's notes).
BRIEF_CAP = 2000


@dataclass(frozen=True)
class Brief:
    """The agent's own words for a fold: replaces the generated note of the steps in ``keys``."""

    key: str  # the first step of the span: the brief is shown where its note would be
    keys: tuple[str, ...]
    text: str
    redactions: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "keys": list(self.keys), "text": self.text,
                "redactions": self.redactions}


@dataclass(frozen=True)
class Decisions:
    """What renderers, ``fork`` and page-in honour. Empty = no decision = today's output."""

    session_id: str = ""
    pinned: frozenset[str] = frozenset()
    expanded: frozenset[str] = frozenset()
    briefs: dict[str, Brief] = field(default_factory=dict)
    boundary: str | None = None  # the next epoch commit folds only steps before this key
    revision: int = 0

    @property
    def empty(self) -> bool:
        return not (self.pinned or self.expanded or self.briefs or self.boundary)

    def held_raw(self, key: str) -> bool:
        """Shown raw by the renderer: pinned (through every fold) or expanded (until refold)."""
        return key in self.pinned or key in self.expanded

    def brief_covering(self, key: str) -> Brief | None:
        """The brief whose span holds ``key`` (the first by its key, for determinism)."""
        for k in sorted(self.briefs):
            if key in self.briefs[k].keys:
                return self.briefs[k]
        return None

    def body(self) -> dict[str, Any]:
        """The file's content without its own hash, in canonical order."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "session_id": self.session_id,
            "revision": self.revision,
            "pinned": sorted(self.pinned),
            "expanded": sorted(self.expanded),
            "briefs": [self.briefs[k].to_json() for k in sorted(self.briefs)],
            "boundary": self.boundary,
        }

    def to_json(self) -> dict[str, Any]:
        body = self.body()
        body["sha256"] = canonical_sha256(body)
        return body


def decisions_path(root: Path, session: str) -> Path:
    return state_path(Path(root), "cold", check_session_id(session), FILE_NAME)


def _strs(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise IntegrityError(f"{where} must be a list of step keys")
    return list(value)


def _typed(doc: dict[str, Any], key: str, want: type, where: str) -> Any:
    value = doc.get(key)
    if type(value) is not want:
        raise IntegrityError(f"{where}: {key} must be {want.__name__} (got {type(value).__name__})")
    return value


def parse(raw: bytes, where: str) -> Decisions:
    """Verify and read a decisions file (IntegrityError with one line on any defect)."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        raise IntegrityError(f"{where} is not valid JSON ({reason})",
                             hint="restore it or delete it to drop every decision") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise IntegrityError(f"{where} is not a contextfork curation file")
    if doc.get("version") != VERSION:
        raise IntegrityError(f"{where} has version {doc.get('version')!r}, expected {VERSION}")
    claimed = doc.get("sha256")
    body = {k: v for k, v in doc.items() if k != "sha256"}
    try:
        actual = canonical_sha256(body)
    except (ValueError, RecursionError):  # what json.loads took but json.dumps will not give back
        actual = ""
    if claimed != actual:
        raise IntegrityError(
            f"{where} does not verify: sha256 {actual[:12]}… != recorded {str(claimed)[:12]}…",
            hint="it was edited outside contextfork; restore it or delete it to drop every decision",
        )
    # The hash says contextfork wrote it; the types are still checked, not assumed.
    briefs: dict[str, Brief] = {}
    raw_briefs = _typed(doc, "briefs", list, where)
    for b in raw_briefs:
        if not isinstance(b, dict):
            raise IntegrityError(f"{where}: every brief must be an object")
        red = b.get("redactions", 0)
        if type(red) is not int or red < 0:
            raise IntegrityError(f"{where}: a brief's redactions must be a non-negative integer")
        brief = Brief(_typed(b, "key", str, where), tuple(_strs(b.get("keys"), where)),
                      _typed(b, "text", str, where), red)  # fmt: skip
        briefs[brief.key] = brief
    boundary = doc.get("boundary", ...)
    if boundary is ... or (boundary is not None and not isinstance(boundary, str)):
        raise IntegrityError(f"{where}: boundary must be a step key or null")
    revision = _typed(doc, "revision", int, where)
    if revision < 0:
        raise IntegrityError(f"{where}: revision must not be negative")
    return Decisions(
        session_id=_typed(doc, "session_id", str, where),
        pinned=frozenset(_strs(doc.get("pinned"), where)),
        expanded=frozenset(_strs(doc.get("expanded"), where)),
        briefs=briefs,
        boundary=boundary,
        revision=revision,
    )


def load_decisions(root: Path, session: str) -> Decisions:
    """The session's decisions, verified; no file yet = no decision (``Decisions()``)."""
    path = decisions_path(root, session)
    return _read(path, str(path.relative_to(Path(root))), session)


def _read(path: Path, where: str, session: str) -> Decisions:
    """The file at ``path``, verified; never read through a symlink nor waited on (a FIFO)."""
    from contextfork.inputfile import read_state_file

    raw = read_state_file(path, where)
    if raw is None:
        return Decisions(session_id=session)
    return parse(raw, where)


def save_decisions(root: Path, decisions: Decisions) -> Path:
    """Write atomically (temp + fsync + rename); the caller holds the store lock."""
    from contextfork.atomic import write_bytes

    path = decisions_path(root, decisions.session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(decisions.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    write_bytes(path, data)
    return path


def load_for_store(store_dir: Path) -> Decisions:
    """The decisions beside a cold store directory (page-in knows its store, not its repo)."""
    name = Path(store_dir).name
    return _read(Path(store_dir) / FILE_NAME, f"{name}/{FILE_NAME}", name)


def step_ids_of(conn: Any, keys: Iterable[str]) -> frozenset[int]:
    """Cold step ids of stable keys in a store's index (``step_keys``; ``index:N`` for a node
    folded without a key). Keys the store does not hold are ignored."""
    import sqlite3

    wanted = sorted(set(keys))
    if not wanted:
        return frozenset()
    out: set[int] = set()
    try:
        rows = conn.execute("SELECT step_id, key FROM step_keys").fetchall()
    except sqlite3.OperationalError:  # a store indexed before keys existed
        rows = []
    newest: dict[str, int] = {}
    unkeyed: set[int] = set()
    for sid, key in rows:
        if key is None:
            unkeyed.add(int(sid))
        else:
            newest[str(key)] = max(int(sid), newest.get(str(key), 0))
    for key in wanted:
        if key in newest:
            out.add(newest[key])
        elif key.startswith("index:") and key[6:].isdigit():
            sid = int(key[6:])
            if sid in unkeyed or not rows:
                out.add(sid)
    return frozenset(out)
