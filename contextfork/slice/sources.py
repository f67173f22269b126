"""The verified sources a slice is cut from: the newest package's parts and the cold store.

A package part is used only when ``handoff.json`` (and ``git_diff.patch``) hash to what the
package's ``manifest.json`` records; a cold-store node only after ``read_node`` re-verified its
identities. Stdlib + the cold store's read path only (the SubagentStart hook imports this).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from contextfork import layout
from contextfork.hashing import sha256_bytes

MAX_PART_BYTES = 4 * 1024 * 1024


class Package:
    def __init__(self, package_id: str, handoff: dict[str, Any], handoff_sha: str,
                 diff: bytes | None, diff_sha: str | None) -> None:  # fmt: skip
        self.package_id = package_id
        self.handoff = handoff
        self.handoff_sha = handoff_sha
        self.diff = diff
        self.diff_sha = diff_sha


def _read_small(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_PART_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _manifest(pkg: Path) -> dict[str, str]:
    raw = _read_small(pkg / "manifest.json")
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    out: dict[str, str] = {}
    for f in files if isinstance(files, list) else []:
        if isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str):
            out[f["path"]] = f["sha256"]
    return out


def _session_of(pkg: Path) -> str | None:
    raw = _read_small(pkg / "session_metadata.json")
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return None
    sid = data.get("parent_session_id") if isinstance(data, dict) else None
    return sid if isinstance(sid, str) else None


def newest_package(root: Path, session_id: str | None) -> Package | None:
    """The newest package exported from this session whose parts verify (None otherwise).

    With no session id, the newest package of the repository."""
    base = layout.packages_dir(root)
    try:
        with os.scandir(base) as entries:
            names = sorted((e.name for e in entries if e.is_dir(follow_symlinks=False)
                            and not e.name.startswith(".")), reverse=True)  # fmt: skip
    except OSError:
        return None
    for name in names[:20]:
        pkg = base / name
        if session_id is not None and _session_of(pkg) != session_id:
            continue
        manifest = _manifest(pkg)
        raw = _read_small(pkg / "handoff.json")
        if raw is None or manifest.get("handoff.json") != sha256_bytes(raw):
            continue  # unverified parts never reach a subagent
        try:
            handoff = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(handoff, dict):
            continue
        diff = _read_small(pkg / "git_diff.patch")
        diff_sha = sha256_bytes(diff) if diff is not None else None
        if diff is not None and manifest.get("git_diff.patch") != diff_sha:
            diff, diff_sha = None, None
        return Package(name, handoff, sha256_bytes(raw), diff, diff_sha)
    return None


class Store:
    """The parent's cold store, read-only: which step holds a transcript line, and page-in."""

    def __init__(self, root: Path, session_id: str) -> None:
        from contextfork.cold.layout import StoreLayout  # lazy: hot path

        self.session_id = session_id
        self.layout = StoreLayout(layout.cold_root(root), session_id)
        self.keys: dict[str, int] = {}
        self.sha: dict[int, str] = {}
        self.ok = False
        if not self.layout.sqlite.is_file() or self.layout.containment_problems():
            return
        try:
            conn = sqlite3.connect(f"file:{self.layout.sqlite}?mode=ro", uri=True, timeout=0.05)
            try:
                for step, key in conn.execute("SELECT step_id, key FROM step_keys"):
                    if isinstance(key, str):
                        self.keys[key] = int(step)
                for step, sha in conn.execute("SELECT step_id, payload_sha256 FROM nodes"):
                    self.sha[int(step)] = str(sha)
            finally:
                conn.close()
            self.ok = True
        except sqlite3.Error:
            self.keys, self.sha = {}, {}

    def step_of_uuid(self, uuid: str | None) -> int | None:
        return self.keys.get(f"uuid:{uuid}") if uuid else None

    def page_in(self, text: str, char_budget: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The folded steps that cover the task's terms (RGSC), as verified blocks; and the
        ones that did not fit. Read-only: the parent's turn state is not touched."""
        if not self.ok or not text.strip() or char_budget < 400:
            return [], []
        from contextfork.cold import index as idx  # lazy: hot path
        from contextfork.cold.api import _render_picks  # lazy: hot path
        from contextfork.cold.selection import select  # lazy: hot path
        from contextfork.cold.store import load_policy  # lazy: hot path

        policy = load_policy(self.layout)
        budget = min(int(policy["per_call_token_cap"]), int(policy["per_turn_token_cap"]))
        with idx.opened(self.layout) as conn:
            sel = select(conn, text, budget, follow_refs=int(policy.get("follow_refs", 1)))
            shown, left = _render_picks(self.layout, sel.picks, char_budget, conn)
        return shown, left
