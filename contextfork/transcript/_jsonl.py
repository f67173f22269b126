"""Streaming JSONL reading shared by the line-based adapters.

Harnesses append to their transcripts while we read them, and single lines can be many MB, so
files are read line by line in binary (offsets are byte-exact) and an unterminated last line that
does not parse is treated as "still being written", not as corruption.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import NotFoundError, UsageError


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
    """Open for binary reading, turning OS errors into one clear user-facing error."""
    try:
        if path.is_dir():
            raise UsageError(f"{path}: is a directory, not a transcript file")
        return open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(f"transcript not found: {path}") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None


def iter_lines(path: Path) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, byte offset, raw bytes, complete?) for every line of ``path``."""
    with open_checked(path) as fh:
        offset = 0
        for lineno, raw in enumerate(fh, start=1):
            yield lineno, offset, raw, raw.endswith(b"\n")
            offset += len(raw)


def read_records(path: Path) -> ReadStats:
    """Parse every complete JSON-object line; count (and skip) malformed ones."""
    stats = ReadStats()
    for lineno, offset, raw, complete in iter_lines(path):
        stats.lines = lineno
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except (UnicodeDecodeError, ValueError) as err:
            if not complete:
                stats.partial_tail = True
                continue
            stats.malformed += 1
            if stats.first_bad_line is None:
                stats.first_bad_line = lineno
                stats.first_bad_reason = str(err).split(":")[0]
            continue
        if not isinstance(obj, dict):
            stats.malformed += 1
            if stats.first_bad_line is None:
                stats.first_bad_line = lineno
                stats.first_bad_reason = "not a JSON object"
            continue
        stats.records.append(Record(lineno, offset, text, obj))
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
