"""Opening files a user (or a hook's stdin) names, without hanging and without unbounded reads.

A path given on the command line can be anything: a FIFO (``open`` blocks until a writer comes,
so the command hangs), ``/dev/zero`` (reading "the whole file" never ends and eats memory), a
directory, a socket. Every reader of user-named input goes through ``open_regular``, which opens
without blocking, refuses anything that is not a regular file with one clear ``UsageError``, and
only then reads. Line readers use ``bounded_lines`` so one enormous line is skipped (and counted)
instead of being held in memory. Stdlib only: the hot paths (status line, hooks) use it too.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from contextfork.envvars import positive_int
from contextfork.errors import IntegrityError, NotFoundError, UnsafeStateDir, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, TextIO

MAX_LINE_ENV = "CONTEXTFORK_MAX_LINE_BYTES"
DEFAULT_MAX_LINE = 64 * 1024 * 1024  # real transcript lines reach a few MB (inline images)
_DRAIN_CHUNK = 1 << 20
BOM = b"\xef\xbb\xbf"


def max_line_bytes() -> int:
    """The longest line a transcript reader keeps (``$CONTEXTFORK_MAX_LINE_BYTES`` overrides)."""
    return positive_int(MAX_LINE_ENV, DEFAULT_MAX_LINE)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path, what: str = "file") -> BinaryIO:
    """Open ``path`` for binary reading; anything but an existing regular file is refused.

    ``O_NONBLOCK`` makes opening a FIFO return at once (instead of waiting for a writer) so it
    can be refused after ``fstat``; blocking mode is restored for the actual reads.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotFoundError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a {what}") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as err:
        os.close(fd)
        raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"{path}: is {_kind(mode)}, not a {what}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_state_file(path: Path, where: str) -> bytes | None:
    """One of contextfork's own state files (a store's turn state, eviction log, curation
    decisions): None when absent. A symlink, FIFO, directory or device there is an
    ``IntegrityError`` (a damaged store, exit 3), never followed and never waited on."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        if os.path.islink(path):
            raise UnsafeStateDir(f"{where} is a symlink; contextfork refuses to read through it",
                                 hint="remove it") from None  # fmt: skip
        raise IntegrityError(f"{where} cannot be read ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise IntegrityError(f"{where} is {_kind(mode)}, not a file", hint="remove it")
        os.set_blocking(fd, True)
        try:
            return fh.read()
        except OSError as err:
            raise IntegrityError(f"{where} cannot be read ({err.strerror or err})") from None


def read_quietly(path: Path, max_size: int, *, tail: int | None = None,
                 follow: bool = True) -> tuple[bytes, int] | None:  # fmt: skip
    """A regular file's bytes, or only its last ``tail`` bytes as they were when opened, with
    the offset they start at; None for anything else: missing, not a regular file (a FIFO is
    never waited on), over ``max_size`` bytes (or grown past it while read), unreadable, a
    symlink unless ``follow``. For readers that degrade quietly (a hook, an offer) instead of
    stopping with an error."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_size:
            return None
        os.set_blocking(fd, True)
        start = max(0, st.st_size - tail) if tail is not None else 0
        if start:
            os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], (st.st_size - start) if tail is not None else max_size + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return None if start + len(data) > max_size else (data, start)


def require_regular(path: Path, what: str = "file") -> Path:
    """``path`` when it is an existing regular file: missing is ``NotFoundError`` (exit 4), a
    directory, FIFO or device is ``UsageError`` (exit 2), so commands check before loading."""
    open_regular(path, what).close()
    return path


def read_regular(path: Path, what: str = "file", limit: int | None = None) -> bytes:
    """The whole of a regular file; more than ``limit`` bytes is a ``UsageError``."""
    with open_regular(path, what) as fh:
        try:
            data = fh.read() if limit is None else fh.read(limit + 1)
        except OSError as err:
            raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None
    if limit is not None and len(data) > limit:
        raise UsageError(f"{path}: larger than {limit} bytes, refusing to read it as a {what}")
    return data


def bounded_lines(
    fh: BinaryIO, max_line: int | None = None
) -> Iterator[tuple[int, bytes | None, bool]]:
    """(byte offset, line, complete?) per line; ``None`` is a line longer than ``max_line``.

    An over-long line is drained in chunks and never held whole. A UTF-8 byte order mark at the
    very start is not part of the first line; offsets stay exact file positions (so the first
    line of such a file starts at offset 3).
    """
    limit = max_line or max_line_bytes()
    offset = 0
    first = True
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if first:
            first = False
            if raw.startswith(BOM):
                offset = len(BOM)
                raw = raw[len(BOM):]
                if not raw:
                    continue
        if len(raw) > limit and not raw.endswith(b"\n"):
            size = len(raw)
            complete = False
            while True:
                chunk = fh.readline(_DRAIN_CHUNK)
                size += len(chunk)
                if not chunk:
                    break
                if chunk.endswith(b"\n"):
                    complete = True
                    break
            yield offset, None, complete
            offset += size
            continue
        yield offset, raw, raw.endswith(b"\n")
        offset += len(raw)


class BoundedLines(io.RawIOBase):
    """A byte stream whose lines are at most ``limit`` bytes: a longer line is cut short by a
    newline (the reader then sees one malformed line) and the rest of it is dropped unread.

    For line protocols on stdin (the MCP server): a peer that never sends a newline must not
    make the reader hold gigabytes.
    """

    def __init__(self, src: BinaryIO, limit: int) -> None:
        super().__init__()
        self._src = src
        self._limit = limit
        self._run = 0
        self._skipping = False
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        while not self._pending:
            chunk = self._src.read1(65536) if hasattr(self._src, "read1") else self._src.read(65536)
            if not chunk:
                return 0
            self._pending = self._filter(chunk)
        n = min(len(view), len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _filter(self, chunk: bytes) -> bytes:
        out = bytearray()
        start = 0
        while start < len(chunk):
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl + 1
            if self._skipping:
                if nl >= 0:
                    self._skipping = False
                    self._run = 0
            elif self._run + (end - start) - (nl >= 0) > self._limit:
                out += b"\n"
                self._skipping = nl < 0
                self._run = 0
            else:
                out += chunk[start:end]
                self._run = 0 if nl >= 0 else self._run + end - start
            start = end
        return bytes(out)


def bounded_text_stdin(limit: int) -> TextIO:
    """``sys.stdin`` with lines bounded by ``limit`` bytes (see ``BoundedLines``)."""
    raw = BoundedLines(sys.stdin.buffer, limit)
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")
