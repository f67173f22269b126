"""The shared file-reading layer under every transcript adapter (contextfork/inputfile.py).

Hostile files must give one clear error or be read with the bad line skipped and counted:
a BOM never costs the first line, one deeply nested or enormous line never makes the whole
transcript unreadable, and a FIFO or device is refused instead of hanging.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import MAX_LINE_ENV, read_regular
from contextfork.transcript import load_session
from tests.harness import cc_fixture


def _body(tmp_path: Path) -> bytes:
    return cc_fixture.write(tmp_path / "plain.jsonl", tmp_path).read_bytes()


def _raw_lines_match_file(path: Path) -> None:
    data = path.read_bytes()
    for step in load_session(path).steps:
        for raw in step.raw:
            chunk = raw.text.encode("utf-8")
            assert data[raw.offset: raw.offset + len(chunk)] == chunk


def test_bom_transcript_keeps_its_first_line(tmp_path: Path) -> None:
    body = _body(tmp_path)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + body)
    plain, with_bom = load_session(tmp_path / "plain.jsonl"), load_session(bom)
    assert with_bom.malformed_lines == 0
    assert len(with_bom.steps) == len(plain.steps)
    assert with_bom.steps[0].user_texts[0].text == plain.steps[0].user_texts[0].text
    _raw_lines_match_file(bom)  # offsets stay exact file positions past the BOM


def test_bom_json_document_reads(tmp_path: Path) -> None:
    doc = {"messages": [{"role": "user", "content": "hello"},
                        {"role": "assistant", "content": "hi"}]}
    path = tmp_path / "chat.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert len(load_session(path).steps) >= 1


def test_deeply_nested_line_is_skipped_and_counted(tmp_path: Path) -> None:
    body = _body(tmp_path)
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    nl = body.index(b"\n") + 1
    path = tmp_path / "deep.jsonl"
    path.write_bytes(body[:nl] + deep + body[nl:])
    session = load_session(path)
    assert session.malformed_lines == 1
    assert len(session.steps) == len(load_session(tmp_path / "plain.jsonl").steps)


@pytest.mark.parametrize("kind", [[1], {"x": 1}])
def test_a_line_whose_type_is_a_list_or_object_is_skipped_first_or_later(
    tmp_path: Path, kind: object
) -> None:
    """Format sniffing and the live walk looked such a ``type`` up in a set: a TypeError, an
    internal error on every command that read the file."""
    body = _body(tmp_path)
    odd = json.dumps({"type": kind, "uuid": "u-odd", "parentUuid": None}).encode() + b"\n"
    for name, data in (("first.jsonl", odd + body), ("later.jsonl", body + odd)):
        path = tmp_path / name
        path.write_bytes(data)
        session = load_session(path)
        assert session.format == "claude-code" and session.malformed_lines == 1
        assert len(session.steps) == len(load_session(tmp_path / "plain.jsonl").steps)


def test_deeply_nested_json_document_is_one_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b'{"messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(UsageError):
        load_session(path)


def test_over_long_line_is_skipped_without_being_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, "100000")
    body = _body(tmp_path)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b'{"pad":"' + b"y" * 500_000 + b'"}\n' + body)
    session = load_session(path)
    assert session.malformed_lines == 1
    assert len(session.steps) == len(load_session(tmp_path / "plain.jsonl").steps)
    _raw_lines_match_file(path)


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError("blocked reading a non-regular file")


def test_fifo_device_and_directory_are_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)  # a regression would block on the FIFO forever
    try:
        for bad, kind in ((fifo, "FIFO"), (Path("/dev/zero"), "device"), (tmp_path, "directory")):
            with pytest.raises(UsageError, match=kind):
                load_session(bad)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    with pytest.raises(NotFoundError):
        load_session(tmp_path / "missing.jsonl")


def test_read_regular_refuses_more_than_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 101)
    assert read_regular(path, limit=101) == b"x" * 101
    with pytest.raises(UsageError, match="larger than 100 bytes"):
        read_regular(path, limit=100)
