"""`status` decodes each Claude Code line with msgspec into only the fields it reads
(telemetry/ccstruct.py): the ``Line`` it builds must be the one ``json`` + ``Line.of`` builds, on
every line of the recorded transcripts and of hostile ones, and every line msgspec would read
differently from ``json`` must be left to ``json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextfork.telemetry import ccstruct
from contextfork.telemetry.ccline import Line, Unsupported
from contextfork.telemetry.scan import ScanState, _feed
from tests.telemetry.test_status_fast import HOSTILE, SHARED
from tests.transcript import cc21
from tests.transcript.test_claude_code import build_session_file


def _generic(raw: bytes) -> list[object] | None:
    """The line as the generic pass reads it: ``json``, then ``Line.of`` (None: not a record)."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    try:
        return Line.of(obj).to_json()
    except Unsupported:
        return ["unsupported"]


def _struct(raw: bytes) -> list[object] | None:
    rec = ccstruct.decode(raw)
    if rec is None:
        return None
    try:
        return ccstruct.line(rec).to_json()
    except Unsupported:
        return ["unsupported"]


def _files(tmp_path: Path) -> list[Path]:
    folder = SHARED / "claude-code"
    files = sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []
    files.append(build_session_file(tmp_path / "built.jsonl"))
    files.append(cc21.write(tmp_path / "cc21.jsonl", grow=2))
    return files


def test_every_line_msgspec_reads_becomes_the_line_json_makes(tmp_path: Path) -> None:
    read = 0
    for path in _files(tmp_path):
        for raw in path.read_bytes().split(b"\n"):
            got = _struct(raw) if raw[:1] not in (b"", b" ") else None
            if got is not None:
                read += 1
                assert got == _generic(raw), (path.name, raw[:200])
    assert read > 20


@pytest.mark.parametrize("i", range(len(HOSTILE)))
def test_a_hostile_line_is_read_as_json_reads_it_or_left_to_json(i: int) -> None:
    raw = HOSTILE[i]
    if raw[:1] in (b"", b" "):
        return  # the pass hands blank and indented lines to json before decoding
    got = _struct(raw)
    assert got is None or got == _generic(raw)


@pytest.mark.parametrize(
    "raw",
    [b'{"type":"user","message":{"content":"a"},"junk":"\xff"}',
     b'{"type":"user","message":{"content":"a"},"junk":"\xed\xa0\x80"}',
     b'{"type":"user","junk":' + b"1" * (sys.get_int_max_str_digits() + 1) + b"}",
     b'{"type":"user","junk":' + b"[" * 901 + b"]" * 901 + b"}",
     b'{"type":"system","subtype":"compact_boundary","compactMetadata":{"preTokens":5}}'],
)  # fmt: skip
def test_lines_msgspec_would_read_unlike_json_are_left_to_json(raw: bytes) -> None:
    """Not UTF-8, or an integer too long for ``int``, where msgspec skips without looking;
    nesting near the recursion limit (where the two give up at different depths); a compaction
    boundary (its metadata is the generic digest's)."""
    assert ccstruct.decode(raw) is None


_FORKED = (b'{"type":"assistant","uuid":"f","forkedFrom":{"sessionId":"s0"},"requestId":"r",'
           b'"message":{"id":"m0","model":"x","usage":{"input_tokens":4,"output_tokens":1}}}')  # fmt: skip
_UNKEYED = (b'{"type":"user","sessionId":"","cwd":"/c","timestamp":"t","message":{"id":"",'
            b'"usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":1}}}')  # fmt: skip


def test_the_billing_scan_fed_from_the_struct_equals_the_scan_fed_from_json(tmp_path: Path) -> None:
    """``ccstruct.feed`` (the pass's billing, straight from the struct) leaves the scan as
    ``scan._feed`` of the line's dict does, line after line, on every line msgspec reads."""
    fed = 0
    for path in _files(tmp_path):
        ours, theirs = ScanState(), ScanState()
        our_seen: set[str] = set()
        their_seen: set[str] = set()
        for raw in [*path.read_bytes().split(b"\n"), _FORKED, _UNKEYED, *HOSTILE]:
            rec = ccstruct.decode(raw) if raw[:1] not in (b"", b" ") else None
            if rec is None:
                continue
            fed += 1
            ccstruct.feed(ours, our_seen, rec)
            _feed(theirs, their_seen, json.loads(raw))
            assert ours.to_json() == theirs.to_json(), (path.name, raw[:200])
            assert our_seen == their_seen
    assert fed > 20
