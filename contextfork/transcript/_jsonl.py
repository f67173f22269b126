"""Streaming JSONL reading shared by the line-based adapters.

Harnesses append to their transcripts while we read them, and single lines can be many MB, so
files are read line by line in binary (offsets are byte-exact) and an unterminated last line that
does not parse is treated as "still being written", not as corruption.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import UsageError
from contextfork.hashing import line_digest
from contextfork.inputfile import bounded_lines, max_line_bytes, open_regular
from contextfork.transcript.source import RawLine, SourceFile


@dataclass(slots=True)
class Record:
    """One parsed line: its position, its span in the file (offset, length and the digest of
    the bytes parsed) and its JSON object. ``text`` is set only for lines built in memory."""

    lineno: int
    offset: int
    length: int
    digest: bytes
    obj: dict[str, Any]
    text: str | None = None

    def raw(self, source: SourceFile | None) -> RawLine:
        """The line as a step's raw line: held text, else a verified span of ``source``."""
        if self.text is not None:
            return RawLine(self.offset, self.text)
        if source is None:
            raise ValueError(f"line {self.lineno}: neither its text nor its file is known")
        return RawLine(self.offset, length=self.length, digest=self.digest, source=source)

    @classmethod
    def held(cls, lineno: int, offset: int, text: str, obj: dict[str, Any]) -> Record:
        """A line built in memory (no file behind it)."""
        return cls(lineno, offset, len(text.encode("utf-8")), b"", obj, text)


@dataclass
class ReadStats:
    malformed: int = 0
    first_bad_line: int | None = None
    first_bad_reason: str | None = None
    partial_tail: bool = False
    lines: int = 0
    usable: int = 0  # records parsed (``records`` holds them when read whole)
    records: list[Record] = field(default_factory=list)


def open_checked(path: Path) -> Any:
    """Open a regular file for binary reading; a FIFO, device or directory is one clear error."""
    return open_regular(path, "transcript")


def iter_lines(path: Path) -> Iterator[tuple[int, int, bytes | None, bool]]:
    """(line number, byte offset, raw bytes, complete?) for every line of ``path``.

    ``raw`` is ``None`` for a line longer than the read bound (it was skipped unread); a UTF-8
    byte order mark before the first line is not part of it.
    """
    with open_checked(path) as fh:
        for lineno, (offset, raw, complete) in enumerate(bounded_lines(fh), start=1):
            yield lineno, offset, raw, complete


class MalformedLine(ValueError):
    """Raised by a reader's ``slim`` for a JSON object that is not one of its lines (a ``type``
    or ``uuid`` that is not a string, say): counted and skipped like a line that is not JSON."""


def _bad(stats: ReadStats, lineno: int, reason: str) -> None:
    stats.malformed += 1
    if stats.first_bad_line is None:
        stats.first_bad_line = lineno
        stats.first_bad_reason = reason


def read_records(
    path: Path, slim: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> ReadStats:
    """Parse every complete JSON-object line; count (and skip) malformed ones.

    ``slim`` (when given) replaces each object by what the adapter keeps of it: a whole session
    is held at once, and the parsed lines it never reads were most of its memory. No line's
    text is kept: a record is a span of the file (``reread`` gives its bytes back, verified).
    """
    stats = ReadStats()
    stats.records = list(each_record(path, stats, slim))
    return stats


def each_record(
    path: Path, stats: ReadStats, slim: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> Iterator[Record]:
    """``read_records`` one record at a time, for an adapter that builds its steps as it reads
    (the parsed lines are not all held at once); ``stats`` counts as it goes (``usable``)."""
    for lineno, offset, raw, complete in iter_lines(path):
        stats.lines = lineno
        if raw is None:
            _bad(stats, lineno, f"line longer than {max_line_bytes()} bytes")
            continue
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            if not complete:
                stats.partial_tail = True
                continue
            reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
            _bad(stats, lineno, reason.split(":")[0])
            continue
        if not isinstance(obj, dict):
            _bad(stats, lineno, "not a JSON object")
            continue
        try:
            kept = slim(obj) if slim else obj
        except MalformedLine as err:
            _bad(stats, lineno, str(err))
            continue
        stats.usable += 1
        yield Record(lineno, offset, len(raw), line_digest(raw), kept)


def reread(source: SourceFile, records: Iterable[Record]) -> Iterator[tuple[Record, bytes]]:
    """Each record with its exact bytes read back from ``source`` (checked against its digest:
    a file rewritten since it was read is one clear error, exit 3)."""
    with source.open() as fh:
        for rec in records:
            yield rec, source.read(fh, rec.offset, rec.length, rec.digest)


def require_records(path: Path, stats: ReadStats, what: str) -> None:
    """A file with no usable line at all is one clear error naming the first bad line."""
    if stats.usable:
        return
    if stats.first_bad_line is not None:
        raise UsageError(
            f"{path}: line {stats.first_bad_line}: not a {what} transcript "
            f"({stats.first_bad_reason}; {stats.malformed} malformed line(s), none usable)"
        )
    raise UsageError(f"{path}: empty transcript (no complete {what} line)")
