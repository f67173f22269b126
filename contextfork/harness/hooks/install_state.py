"""What a harness settings file looked like before we first changed it, so uninstall restores it.

``hooks install --claude|--codex`` edits files that belong to the user. The first time we change
one, we keep its exact text (or the fact that it did not exist, and which directories we had to
create) in a small record, with the SHA-256 of the bytes we wrote. On uninstall:

- the file is still exactly what we wrote → the original bytes come back (or the file, and the
  directories we created, go away again): byte-exact, whatever its formatting was;
- someone edited it since → the caller removes only our entries, and uses the recorded original
  to know which containers (``"hooks": {}``, an empty event list, ``[features]``) were there
  before and must stay.

Records of files inside the repository live in ``<repo>/.contextfork/harness/installs/`` (kept
out of git by ``.git/info/exclude``); records of files elsewhere (``--user`` settings) live
beside them in ``.contextfork-install/``, so they follow ``CLAUDE_CONFIG_DIR``/``CODEX_HOME``.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contextfork import atomic, layout
from contextfork.errors import ContextforkError
from contextfork.hashing import sha256_bytes, sha256_text


@dataclass
class Record:
    path: str
    before: str | None  # exact text before our first change; None: the file did not exist
    after_sha256: str  # sha256 of the bytes we wrote last
    exact: bool = True  # False once someone else changed the file between two of our writes
    created_dirs: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def real_target(path: Path) -> Path:
    """The file we actually write: a symlinked settings file is written through."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _record_file(root: Path, target: Path) -> Path:
    real = Path(os.path.realpath(target))
    key = sha256_text(str(real))[:20]
    try:
        real.relative_to(Path(os.path.realpath(root)))
    except ValueError:
        return layout.install_record_beside(real, key[:8])
    return layout.install_record(root, key)


def load(root: Path, target: Path) -> Record | None:
    try:
        raw = json.loads(_record_file(root, target).read_text(encoding="utf-8"))
        return Record(
            path=str(raw["path"]),
            before=raw["before"] if isinstance(raw["before"], str) else None,
            after_sha256=str(raw["after_sha256"]),
            exact=bool(raw.get("exact", True)),
            created_dirs=[str(d) for d in raw.get("created_dirs", [])],
            extra=dict(raw.get("extra") or {}),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def before_data(rec: Record | None) -> dict[str, Any] | None:
    """The original file parsed as JSON (None when unknown, absent or not an object)."""
    if rec is None or rec.before is None:
        return None
    try:
        data = json.loads(rec.before)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def missing_dirs(path: Path) -> list[Path]:
    """The directories that writing ``path`` will create, outermost first."""
    out: list[Path] = []
    cur = path.parent
    while not cur.exists() and cur != cur.parent:
        out.append(cur)
        cur = cur.parent
    return out[::-1]


def note_write(
    root: Path,
    target: Path,
    before: bytes | None,
    after: bytes,
    created: list[Path],
    extra: dict[str, Any] | None = None,
) -> None:
    """Remember the original of ``target`` (first write only) and the bytes written now."""
    rec = load(root, target)
    if rec is None:
        rec = Record(
            path=str(target),
            before=None if before is None else before.decode("utf-8"),
            after_sha256="",
            created_dirs=[str(d) for d in created],
        )
    elif before is None or sha256_bytes(before) != rec.after_sha256:
        rec.exact = False  # edited by someone else since our last write: restore structurally
    rec.after_sha256 = sha256_bytes(after)
    if extra:
        rec.extra.update(extra)
    if root / layout.STATE_DIR in _record_file(root, target).parents:
        with contextlib.suppress(ContextforkError, OSError):  # not a repository: nothing to hide
            layout.exclude_state_dir(root)
    atomic.write_bytes(_record_file(root, target), atomic.dump_json_bytes(asdict(rec)))


def forget(root: Path, target: Path) -> None:
    rec_file = _record_file(root, target)
    try:
        os.unlink(rec_file)
    except FileNotFoundError:
        return
    if rec_file.parent.name == layout.INSTALLS_BESIDE:
        _rmdir_if_empty(rec_file.parent)


def _rmdir_if_empty(path: Path) -> bool:
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def restore_exact(root: Path, target: Path, current: bytes) -> bool:
    """Put the original back when ``target`` is still exactly what we wrote; True if done."""
    rec = load(root, target)
    if rec is None or not rec.exact or sha256_bytes(current) != rec.after_sha256:
        return False
    if rec.before is None:
        os.unlink(target)
        atomic.fsync_dir(target.parent)
        for d in reversed(rec.created_dirs):
            _rmdir_if_empty(Path(d))
    else:
        mode = target.stat().st_mode & 0o777
        atomic.write_bytes(target, rec.before.encode("utf-8"), mode=mode)
    forget(root, target)
    return True


def remove_created(root: Path, target: Path, rec: Record | None) -> None:
    """A file we created, emptied of everything ours, goes away with the dirs we created."""
    os.unlink(target)
    atomic.fsync_dir(target.parent)
    for d in reversed(rec.created_dirs if rec else []):
        _rmdir_if_empty(Path(d))


__all__ = [
    "Record",
    "before_data",
    "forget",
    "load",
    "missing_dirs",
    "note_write",
    "real_target",
    "remove_created",
    "restore_exact",
]
