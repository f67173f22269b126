"""Streaming JSONL reading shared by the line-based adapters.

Harnesses append to their transcripts while we read them, and single lines can be many MB, so
files are read line by line in binary (offsets are byte-exact) and an unterminated last line that
does not parse is treated as "still being written", not as corruption.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import UsageError
from contextfork.inputfile import bounded_lines, max_line_bytes, open_regular


@dataclass
class Record:
    """One parsed line: its position, its exact text and its JSON object."""

    lineno: int
    offset: int
    text: str
    obj: dict[str, Any]


@dataclass
class ReadStats:
    malformed: int = 0
    first_bad_line: int | None = None
    first_bad_reason: str | None = None
    partial_tail: bool = False
    lines: int = 0
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
    is held at once, and the parsed lines it never reads were most of its memory.
    """
    stats = ReadStats()
    for lineno, offset, raw, complete in iter_lines(path):
        stats.lines = lineno
        if raw is None:
            _bad(stats, lineno, f"line longer than {max_line_bytes()} bytes")
            continue
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
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
        stats.records.append(Record(lineno, offset, text, slim(obj) if slim else obj))
    return stats


def require_records(path: Path, stats: ReadStats, what: str) -> None:
    """A file with no usable line at all is one clear error naming the first bad line."""
    if stats.records:
        return
    if stats.first_bad_line is not None:
        raise UsageError(
            f"{path}: line {stats.first_bad_line}: not a {what} transcript "
            f"({stats.first_bad_reason}; {stats.malformed} malformed line(s), none usable)"
        )
    raise UsageError(f"{path}: empty transcript (no complete {what} line)")
