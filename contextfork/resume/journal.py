"""The undo journal of ``resume --apply``: what a restore is about to change, written first.

Before the first byte of the checkout changes, every path the restore will touch is backed up
(its bytes and mode, its link target, or the fact that it did not exist), together with the tree
of the index, into ``.contextfork/apply-journal/``. The journal is built in a staging directory
and published with one rename, so it is either complete or absent. A restore that finishes
removes it; a restore killed half-way leaves it, and the next ``resume --apply`` (or
``resume --rollback``) puts every journaled path and the index back before doing anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat as stat_mod
from pathlib import Path, PurePosixPath
from typing import Any

from contextfork import atomic, gitstate, layout, scratch
from contextfork.errors import IntegrityError
from contextfork.package.store import utc_now_iso
from contextfork.paths import safe_join, symlink_in_parents
from contextfork.testhooks import kill_point

JOURNAL_FILE = "journal.json"
JOURNAL_VERSION = 1
STAGING_PREFIX = ".staging-journal-"


def journal_dir(root: Path) -> Path:
    """``.contextfork/apply-journal``, every component checked (a symlink is refused, exit 3)."""
    return layout.journal_dir(root)


def load(root: Path) -> dict[str, Any] | None:
    """The pending journal, or None; a journal we cannot read is an integrity problem."""
    jdir = journal_dir(root)
    if not os.path.lexists(jdir):
        return None
    if jdir.is_symlink() or not jdir.is_dir():
        raise IntegrityError(f"{jdir} is not a plain directory", hint="remove it by hand")
    try:
        data = json.loads((jdir / JOURNAL_FILE).read_bytes())
    except (OSError, ValueError) as exc:
        raise IntegrityError(
            f"the apply journal {jdir} is unreadable ({exc})",
            hint="inspect it, then remove it by hand",
        ) from exc
    if not isinstance(data, dict) or data.get("journal_version") != JOURNAL_VERSION:
        raise IntegrityError(f"the apply journal {jdir} has an unknown format")
    return data


def _entry(root: Path, rel: str, staging: Path, n: int) -> dict[str, Any]:
    full = safe_join(root, rel)
    try:
        st = full.lstat()
    except FileNotFoundError:
        return {"path": rel, "before": "absent"}
    except NotADirectoryError:
        return {"path": rel, "before": "absent"}
    if stat_mod.S_ISLNK(st.st_mode):
        return {"path": rel, "before": "link", "link_target": os.readlink(full)}
    if stat_mod.S_ISREG(st.st_mode):
        backup = f"backup/{n}"
        atomic.write_into(staging, backup, full.read_bytes())
        return {"path": rel, "before": "file", "backup": backup,
                "mode": 0o755 if st.st_mode & 0o111 else 0o644}  # fmt: skip
    return {"path": rel, "before": "other"}  # a directory: left as it is on rollback


def _missing_dirs(root: Path, paths: list[str]) -> list[str]:
    """Parent directories that do not exist yet: a rollback removes them again when empty."""
    out: set[str] = set()
    for rel in paths:
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if not os.path.lexists(root / parent):
                out.add(parent)
    return sorted(out, key=lambda p: (-p.count("/"), p))


def begin(root: Path, paths: list[str], info: dict[str, Any]) -> None:
    """Back up ``paths`` and publish the journal in one rename (before anything is changed)."""
    index_tree = gitstate.index_tree(root)
    if index_tree is None:
        raise IntegrityError("the index has unmerged entries; resolve them before --apply")
    unique = sorted(set(paths))
    parent = layout.state_path(root)
    layout.exclude_state_dir(root)
    scratch.sweep_stale(parent, (STAGING_PREFIX, ".trash-"))  # left by a killed writer/remover
    with atomic.staging_dir(parent, prefix=STAGING_PREFIX) as staging:
        entries = [_entry(root, rel, staging, n) for n, rel in enumerate(unique)]
        doc = {
            "journal_version": JOURNAL_VERSION,
            "created_at": utc_now_iso(),
            "pid": os.getpid(),
            "index_tree": index_tree,
            "entries": entries,
            "missing_dirs": _missing_dirs(root, unique),
            **info,
        }
        atomic.write_into(staging, JOURNAL_FILE, atomic.dump_json_bytes(doc))
        kill_point("apply:journal-staged")
        atomic.publish_dir(staging, journal_dir(root))


def _restore(root: Path, jdir: Path, e: dict[str, Any]) -> str | None:
    """Put one path back; the reason when it cannot be (never writes through a symlink)."""
    rel = str(e["path"])
    try:
        full = safe_join(root, rel)
    except ValueError as exc:
        return f"{rel}: {exc}"
    through = symlink_in_parents(root, rel)
    if through:
        if e["before"] != "absent":
            return f"{rel}: below the symlink {through!r}"
        with contextlib.suppress(OSError):
            os.unlink(root / through)  # the patch made that link; it was not there before
    _drop_temps(full)
    if e["before"] == "other":
        return None
    if os.path.lexists(full) and full.is_dir() and not full.is_symlink():
        return f"{rel}: a directory is in the way"
    if e["before"] == "absent":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(full)
    elif e["before"] == "link":
        atomic.write_symlink(full, str(e["link_target"]))
    else:
        data = (jdir / str(e["backup"])).read_bytes()
        atomic.write_bytes(full, data, mode=int(e["mode"]))
    return None


def _drop_temps(full: Path) -> None:
    """Temp files ``atomic.write_bytes``/``write_symlink`` leave beside ``full`` when killed
    (``.<name>.<random>.tmp``, ``.<name>.<pid>.lnk.tmp``)."""
    try:
        names = os.listdir(full.parent)
    except OSError:
        return
    for name in names:
        if name.startswith(f".{full.name}.") and name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                os.unlink(full.parent / name)


def rollback(root: Path) -> dict[str, Any] | None:
    """Undo an interrupted restore from its journal; None when there is none."""
    doc = load(root)
    if doc is None:
        return None
    jdir = journal_dir(root)
    failed = [why for e in doc["entries"] if (why := _restore(root, jdir, e))]
    for d in doc.get("missing_dirs", []):
        with contextlib.suppress(OSError):
            os.rmdir(safe_join(root, str(d)))  # only when empty
    gitstate.reset_index(root, str(doc["index_tree"]))
    if failed:
        raise IntegrityError(
            f"rollback could not restore {len(failed)} path(s): {failed[0]}",
            hint=f"the journal is kept in {jdir}; fix the path by hand and run it again",
        )
    atomic.remove_tree(jdir)
    return {"package_id": doc.get("package_id"), "restored": len(doc["entries"])}


def finish(root: Path) -> None:
    """The restore is complete: the journal is no longer needed."""
    atomic.remove_tree(journal_dir(root))
