"""Scratch space on disk: private temporary names, directories and copies, removed trees, and
spilled bytes, none of them ever published (``atomic`` publishes: temp file, fsync, rename).

Without ``tempfile`` and ``shutil`` (they load ``random`` and the compression modules: ~4 ms of
CPU on every pre-commit checkpoint, issue 27): ``temp_file`` is ``mkstemp``, ``temp_dir``
``mkdtemp``, ``remove_dir`` ``rmtree(ignore_errors=True)``, ``copy_file`` ``copy2`` for an
index.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from contextfork.staleness import is_stale, owner_pid

_EXCL = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def temp_file(directory: Path | str, prefix: str, suffix: str = "") -> tuple[int, str]:
    """``tempfile.mkstemp`` without ``tempfile`` (it loads ``shutil``, ``random`` and the
    compression modules: ~4 ms of every pre-commit checkpoint): a new file (0600, never one
    that was there) named ``prefix`` + 12 random hex digits + ``suffix``; (open fd, path)."""
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, _EXCL, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")  # pragma: no cover


def temp_dir(parent: Path | str, prefix: str) -> str:
    """``tempfile.mkdtemp`` without ``tempfile``: a new directory (0700) in ``parent``."""
    for _ in range(100):
        path = os.path.join(parent, f"{prefix}{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {parent}")  # pragma: no cover


def remove_dir(path: Path | str) -> None:
    """``shutil.rmtree(path, ignore_errors=True)`` without ``shutil``: bottom up, a symlink
    removed as a name (never followed)."""
    if not os.path.islink(path):
        for dirpath, dirnames, filenames in os.walk(path, topdown=False):
            for name in filenames:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(dirpath, name))
            for name in dirnames:
                _remove_name(os.path.join(dirpath, name))
    _remove_name(os.fspath(path))


def _remove_name(path: str) -> None:
    with contextlib.suppress(OSError):
        if os.path.islink(path):
            os.unlink(path)
        else:
            os.rmdir(path)


def copy_file(src: Path | str, dst: str) -> None:
    """A private copy at the new name ``dst`` with ``src``'s modification time (git compares
    an index's entries with its mtime: the racy-entry check), like ``shutil.copy2``."""
    with open(src, "rb") as fh:
        data = fh.read()
        st = os.fstat(fh.fileno())
    fd = os.open(dst, _EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def sweep_stale(parent: Path, prefixes: tuple[str, ...] = (".staging-",), *,
                files: bool = False, by_ctime: bool = False) -> list[str]:  # fmt: skip
    """Remove staging directories that killed writers left in ``parent``; returns their names.

    Only stale ones go (see ``is_stale``; ``by_ctime`` as there), so a concurrent writer's
    directory is never touched. ``files``: a stale file or symlink of those names goes too
    (unlinked, never followed); otherwise only real directories are looked at."""
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None:
            continue
        path = parent / name
        is_dir = path.is_dir() and not path.is_symlink()
        if not (is_dir or files) or not is_stale(path, owner_pid(name, prefix), by_ctime=by_ctime):
            continue
        if is_dir:
            remove_dir(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        removed.append(name)
    return removed


class Spill:
    """Scratch bytes one operation parks on disk instead of in memory: an anonymous temporary
    file in ``directory`` (never named, never synced, gone when closed or when the process
    dies), read back by the (offset, length) ``put`` returned."""

    def __init__(self, directory: Path) -> None:
        import tempfile  # lazy: hot path (see temp_file)

        self._fh = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by close()
        self._end = 0

    def put(self, data: bytes) -> tuple[int, int]:
        self._fh.seek(self._end)
        self._fh.write(data)
        at, self._end = self._end, self._end + len(data)
        return at, len(data)

    def get(self, at: int, length: int) -> bytes:
        self._fh.seek(at)
        return self._fh.read(length)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
