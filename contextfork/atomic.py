"""The only module that writes files: temp file + fsync + rename, so readers never see half a file.

A crash at any point leaves either the old content or the new content, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _temp_then_replace(tmp: str, path: Path) -> Iterator[None]:
    """Run the body that fills ``tmp``, then rename it over ``path``; on failure remove ``tmp``."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically (same-directory temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with _temp_then_replace(tmp, path):
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)


def write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), mode=mode)


def write_symlink(path: Path, target: str) -> None:
    """Create or replace the symlink ``path`` -> ``target`` atomically (temp link + rename).

    Only the link itself is written; nothing is ever written through it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = str(path.parent / f".{path.name}.{os.getpid()}.lnk.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    with _temp_then_replace(tmp, path):
        os.symlink(target, tmp)


def dump_json_bytes(obj: Any) -> bytes:
    """Pretty, stable JSON for files people read (canonical hashing lives in ``hashing``)."""
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def write_json(path: Path, obj: Any) -> None:
    write_bytes(path, dump_json_bytes(obj))


def write_into(directory: Path, rel: str, data: bytes, *, mode: int | None = None) -> None:
    """Write a file inside a private staging directory; ``publish_dir`` fsyncs it before the
    whole directory becomes visible with one rename."""
    target = directory / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(target, mode)


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """fsync every file and directory of a staged tree before it is published.

    fsync releases the GIL, so a small thread pool overlaps the device flushes: one package
    holds a hundred small files and serial fsyncs were a third of export time.
    """
    files: list[str] = []
    dirs: list[str] = []
    for dirpath, _dirnames, filenames in os.walk(root):
        dirs.append(dirpath)
        files.extend(os.path.join(dirpath, f) for f in filenames)
    if len(files) > 4:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(_fsync_path, files))
    else:
        for f in files:
            _fsync_path(f)
    for d in dirs:
        fsync_dir(Path(d))


@contextlib.contextmanager
def staging_dir(parent: Path, prefix: str = ".staging-") -> Iterator[Path]:
    """A private temp directory beside the final location; removed unless published."""
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield tmp
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish_dir(staged: Path, final: Path) -> None:
    """Move a fully written staging directory into place in one rename.

    Refuses to replace an existing directory: published packages are immutable.
    """
    _fsync_tree(staged)
    if final.exists():
        raise FileExistsError(str(final))
    os.rename(staged, final)
    fsync_dir(final.parent)


def replace_dir(staged: Path, final: Path) -> None:
    """Swap a regenerated directory (a static site) into place: old one aside, new one in.

    Readers see the old or the new tree, never a mix; between the two renames the path is
    briefly absent, which a static site can afford (packages use ``publish_dir``).
    """
    _fsync_tree(staged)
    trash = final.parent / f".trash-{final.name}-{os.getpid()}"
    had = final.exists()
    if had:
        os.rename(final, trash)
    os.rename(staged, final)
    fsync_dir(final.parent)
    if had:
        shutil.rmtree(trash, ignore_errors=True)


def remove_tree(path: Path) -> None:
    """Delete a published directory by renaming it aside first, so no half-deleted copy is visible."""
    if not path.exists():
        return
    trash = path.parent / f".trash-{path.name}-{os.getpid()}"
    os.rename(path, trash)
    fsync_dir(path.parent)
    shutil.rmtree(trash, ignore_errors=True)
