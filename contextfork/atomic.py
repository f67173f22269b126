"""The only module that writes files: temp file + fsync + rename, so readers never see half a file.

A crash at any point leaves either the old content or the new content, never a mix.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from contextfork.scratch import remove_dir, temp_dir, temp_file

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
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
def _temp_then_replace(tmp: str, path: Path, sync_dir: bool = True) -> Iterator[None]:
    """Run the body that fills ``tmp``, then rename it over ``path``; on failure remove ``tmp``."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def write_bytes(path: Path, data: bytes, *, mode: int | None = None, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (same-directory temp file, fsync, rename).
    ``sync_dir`` False: the caller flushes the directory (the rename) itself, later, e.g. with
    the files of a package (``publish_dir``'s ``also_flush``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(path.parent, f".{path.name}.", ".tmp")
    _fill_then_replace(fd, tmp, path, data, mode, sync_dir)


def write_files(directory: Path, files: dict[str, bytes]) -> None:
    """Write several files of one directory, each atomically: every temp file written, then
    each flushed (the first fsync commits them all, the others find little left), then each
    renamed into place in the order given, then the directory flushed once (a pre-commit
    checkpoint's two note files: two fsync rounds less on every commit)."""
    directory.mkdir(parents=True, exist_ok=True)
    temps: list[str] = []
    try:
        for name in files:
            fd, tmp = temp_file(directory, f".{name}.", ".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(files[name])
        for tmp in temps:
            _fsync_path(tmp)
        for name, tmp in zip(files, temps, strict=True):
            os.replace(tmp, directory / name)
    except BaseException:
        for tmp in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    fsync_dir(directory)


def write_output(path: Path, data: bytes) -> None:
    """Write a file the user named (``replay --plot``) atomically, with the mode any program's
    output gets: an existing file's own mode, else 0o666 less the umask (the kernel applies
    it). ``write_bytes`` keeps contextfork's own state private: mkstemp's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        st = os.stat(path)
        keep = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        keep = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"no free temporary name beside {path}")
    _fill_then_replace(fd, tmp, path, data, keep)


def _fill_then_replace(
    fd: int, tmp: str, path: Path, data: bytes, mode: int | None, sync_dir: bool = True
) -> None:
    """``data`` into the open temp file, on disk (fsync), its mode set, then renamed over."""
    with _temp_then_replace(tmp, path, sync_dir):
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)


def append_line(path: Path, line: bytes) -> int:
    """Append one line with a single ``O_APPEND`` write and return the file's new size.
    For logs that several processes write at once (parallel hooks): a read-modify-write loses
    lines, while one small ``O_APPEND`` write lands whole. A symlink at ``path`` is refused."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, line)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def write_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """Like ``write_bytes`` for content produced piece by piece (never held whole in memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(path.parent, f".{path.name}.", ".tmp")
    with _temp_then_replace(tmp, path), os.fdopen(fd, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())


def move_aside(path: Path, suffix: str) -> Path:
    """Rename ``path`` to ``<path><suffix>`` (replacing an older one): a corrupt file kept."""
    aside = path.with_name(path.name + suffix)
    os.replace(path, aside)
    fsync_dir(path.parent)
    return aside


def write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), mode=mode)


def write_symlink(path: Path, target: str) -> None:
    """Create or replace the symlink ``path`` -> ``target`` atomically (temp link + rename).
    Only the link itself is written; nothing is ever written through it."""
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


def write_into(
    directory: Path, rel: str, data: bytes | Iterable[bytes], *, mode: int | None = None
) -> None:
    """Write a file inside a private staging directory; ``publish_dir`` fsyncs it before the
    whole directory becomes visible with one rename. ``data``: the bytes, or their pieces in
    order (a large file made piece by piece is never held whole)."""
    target = directory / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as fh:
        for chunk in (data,) if isinstance(data, bytes) else data:
            fh.write(chunk)
    if mode is not None:
        os.chmod(target, mode)


FEW_TO_FSYNC = 16  # up to this many written (not linked) files, publish_dir fsyncs each
#: Above this much dirty page cache (system-wide, /proc/meminfo), flushing the whole filesystem
#: could wait on other programs' writes: each file is fsynced instead.
WHOLE_FS_DIRTY_LIMIT = 64 << 20


@functools.cache
def _syncfs() -> Any:
    """libc's syncfs(2) where it reports write-back errors (Linux >= 5.8), else None."""
    if sys.platform != "linux":
        return None
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (5, 8):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    return fn


def _dirty_bytes() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"Dirty:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def whole_fs_sync_cheap() -> bool:
    """Will one syncfs flush a staged tree, instead of an fsync per file? Only where syncfs
    reports errors and little else is waiting to be written (then it costs about one fsync;
    a hundred fsyncs, even overlapped, were a fifth of export's CPU)."""
    if _syncfs() is None:
        return False
    dirty = _dirty_bytes()
    return dirty is not None and dirty <= WHOLE_FS_DIRTY_LIMIT


def sync_filesystem(path: Path) -> None:
    """syncfs(2) on the filesystem holding ``path``: every file and directory written there,
    data and metadata, is on disk when it returns (OSError when write-back failed)."""
    fn = _syncfs()
    if fn is None:
        raise OSError("syncfs is not available here")
    fd = os.open(path, os.O_RDONLY)
    try:
        if fn(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BackgroundWriter:
    """Files written into a staging directory, each fsynced once written by worker threads.
    Creating and flushing a hundred snapshot files is mostly waiting on the kernel and the
    device (it releases the GIL), so the caller goes on with its own work meanwhile. Where
    ``publish_dir`` will flush the whole filesystem with one syncfs instead, the files are
    written in the caller's thread (no fsync left to overlap). ``wait`` re-raises the first
    failure and returns the paths fsynced or ``link``ed, which ``publish_dir`` then does not
    fsync (again). Always ``close`` it (``with``) before the staging directory goes.
    """

    def __init__(self, directory: Path, workers: int = 4) -> None:
        self.directory = directory
        self._workers = workers
        self._pool: Any = None
        self._jobs: list[Any] = []
        self._linked: set[str] = set()
        self._made: set[Path] = set()
        self._failure: OSError | None = None
        # syncfs at publish, or an fsync per file: decided at the first write (often none).
        self.fsync_each: bool | None = None
        self.unsynced = 0

    def _write(self, rel: str, data: bytes) -> str:
        write_into(self.directory, rel, data)
        path = str(self.directory / rel)
        _fsync_path(path)
        return path

    def write(self, rel: str, data: bytes) -> None:
        if self.fsync_each is None:
            self.fsync_each = not whole_fs_sync_cheap()
        if not self.fsync_each:  # a page-cache write: cheaper here than a thread hand-off
            if self._failure is None:
                try:
                    write_into(self.directory, rel, data)
                    self.unsynced += 1
                except OSError as exc:
                    self._failure = exc  # raised by wait(), like a worker's failure
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=self._workers)
        self._jobs.append(self._pool.submit(self._write, rel, data))

    def link(self, rel: str, source: Path, data: bytes) -> bool:
        """A second name at ``rel`` for ``source``, a published (flushed, never rewritten in place)
        file holding exactly ``data``: no new file, no fsync. False, nothing left, when it cannot
        (not a regular file, another filesystem, other bytes: compared through the new name)."""
        target, linked = self.directory / rel, False
        with contextlib.suppress(OSError):
            st = os.lstat(source)
            if self._failure is None and stat.S_ISREG(st.st_mode) and st.st_size == len(data):
                if target.parent not in self._made:  # one mkdir per directory, not per file
                    target.parent.mkdir(parents=True, exist_ok=True)
                    self._made.add(target.parent)
                os.link(source, target, follow_symlinks=False)
                linked = True
                with open(target, "rb") as fh:
                    if fh.read(len(data) + 1) == data:
                        self._linked.add(str(target))
                        return True
        if linked:
            with contextlib.suppress(OSError):
                os.unlink(target)
        return False

    def wait(self) -> frozenset[str]:
        if self._failure is not None:
            raise self._failure
        return frozenset(job.result() for job in self._jobs) | self._linked

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fsync_tree(
    root: Path, synced: frozenset[str] = frozenset(), whole_fs: bool | None = None,
    also_flush: Iterable[Path] = (),
) -> None:  # fmt: skip
    """fsync every file and directory of a staged tree before it is published (files in
    ``synced`` were fsynced already, by a ``BackgroundWriter``), or flush its whole filesystem
    at once where that is cheap (``whole_fs``: the writer's own decision, else
    ``whole_fs_sync_cheap`` now). fsync releases the GIL: up to 8 threads overlap the flushes
    (serial: a third of export; concurrent.futures: ~9 ms of imports on every checkpoint).
    ``also_flush``: directories elsewhere flushed in the same round (a rename made just before,
    whose directory its writer left unflushed: ``write_bytes(sync_dir=False)``)."""
    if whole_fs_sync_cheap() if whole_fs is None else whole_fs:
        sync_filesystem(root)
        for d in also_flush:  # perhaps on another filesystem
            fsync_dir(d)
        return
    files: list[str] = []
    dirs: set[str] = set()
    for dirpath, _dirnames, filenames in os.walk(root):
        dirs.add(dirpath)
        files.extend(
            path for path in (os.path.join(dirpath, f) for f in filenames) if path not in synced
        )
    failed: list[OSError] = []

    def flush(chunk: list[str]) -> None:
        try:
            for f in chunk:
                if f in dirs:
                    fsync_dir(Path(f))
                else:
                    _fsync_path(f)
        except OSError as exc:
            failed.append(exc)

    # The directories in the same overlapped round as the files (each fsync waits on the
    # journal; one round per directory after the files cost a commit's time under load).
    dirs.update(str(d) for d in also_flush)
    todo = files + sorted(dirs)
    n = 8 if len(todo) > 4 else 1
    threads = [threading.Thread(target=flush, args=(todo[i::n],)) for i in range(1, n)]
    for t in threads:
        t.start()
    flush(todo[0::n])
    for t in threads:
        t.join()
    if failed:
        raise failed[0]




@contextlib.contextmanager
def staging_dir(parent: Path, prefix: str = ".staging-") -> Iterator[Path]:
    """A private temp directory beside the final location; removed unless published.

    Its name carries this process's pid, so a later run can tell a dead writer's leftover
    (``scratch.sweep_stale``) from a concurrent writer's directory."""
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(temp_dir(parent, f"{prefix}{os.getpid()}-"))
    try:
        yield tmp
    finally:
        if tmp.exists():
            remove_dir(tmp)


def publish_dir(
    staged: Path, final: Path, *, writer: BackgroundWriter | None = None,
    also_flush: Iterable[Path] = (),
) -> None:  # fmt: skip
    """Move a fully written staging directory into place in one rename.

    Refuses to replace an existing directory: published packages are immutable. ``writer``:
    the one that wrote (part of) it; its files already fsynced are not fsynced again, and its
    choice between an fsync per file and one whole-filesystem flush stands (decided once), but
    for a few files only (the rest linked): syncfs would wait on every other program's writes.
    ``also_flush``: directories flushed with the staged tree, before the rename (see
    ``_fsync_tree``)."""
    if writer is None:
        _fsync_tree(staged, also_flush=also_flush)
    else:
        many = writer.unsynced > FEW_TO_FSYNC  # then the writer has decided (a first write)
        _fsync_tree(staged, writer.wait(), whole_fs=many and not writer.fsync_each,
                    also_flush=also_flush)  # fmt: skip
    if final.exists():
        raise FileExistsError(str(final))
    os.rename(staged, final)
    fsync_dir(final.parent)


def publish_files(staged: Path, final_dir: Path) -> list[Path]:
    """Move every file of a fully written flat staging directory into ``final_dir``: all
    flushed at once (``_fsync_tree``'s thread pool), each then renamed into place, never over an
    existing file (FileExistsError; the caller holds the lock that makes the check final), and
    ``final_dir`` flushed once. Many small files then cost one overlapped flush instead of two
    serial fsyncs each (a pulled cold session: ~9 ms a node before)."""
    _fsync_tree(staged)
    final_dir.mkdir(parents=True, exist_ok=True)
    moved: list[Path] = []
    for name in sorted(os.listdir(staged)):
        dst = final_dir / name
        if os.path.lexists(dst):
            raise FileExistsError(str(dst))
        os.rename(staged / name, dst)
        moved.append(dst)
    fsync_dir(final_dir)
    return moved


def replace_dir(staged: Path, final: Path) -> None:
    """Swap a regenerated directory (a static site) into place: old one aside, new one in.

    Readers see the old or the new tree, never a mix; between the two renames the path is
    briefly absent, which a static site can afford (packages use ``publish_dir``)."""
    _fsync_tree(staged)
    trash = final.parent / f".trash-{final.name}-{os.getpid()}"
    had = final.exists()
    if had:
        os.rename(final, trash)
    os.rename(staged, final)
    fsync_dir(final.parent)
    if had:
        remove_dir(trash)


def remove_tree(path: Path, *, later: bool = False) -> None:
    """Delete a published directory, renamed aside first so no half-deleted copy is visible.
    ``later``: a detached ``rm -rf`` deletes it (killed: a dead owner's ``.trash-``, swept)."""
    if not path.exists():
        return
    trash = path.parent / f".trash-{os.getpid()}-{path.name}"
    os.rename(path, trash)
    fsync_dir(path.parent)
    with contextlib.suppress(OSError):  # sh starts rm in the background and exits: none to reap
        if later and hasattr(os, "posix_spawnp"):
            quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
            cmd = ["sh", "-c", 'rm -rf -- "$1" &', "sh", str(trash)]
            os.waitpid(os.posix_spawnp("sh", cmd, os.environ, file_actions=quiet, setsid=True), 0)
            return
    remove_dir(trash)
