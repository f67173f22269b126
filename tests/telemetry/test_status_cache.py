"""`status` on a large Claude Code file resumes its pass from a cache (telemetry/cccache.py): the
report after appends equals a fresh full read, only the appended bytes are parsed, and a file that
was truncated, rewritten or replaced (or a damaged cache) is read whole again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from contextfork.telemetry import cccache, ccread, ccstatus
from tests.telemetry.test_status_fast import _fast, _full
from tests.transcript import cc21
from tests.transcript.builders import dumps


@pytest.fixture
def resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Every file size is cached; the offsets each pass resumed from (None: read whole)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cccache, "MIN_BYTES", 0)
    seen: list[int | None] = []
    real = ccread.read

    def spy(path: Path, *, subagent: bool = False, resume: ccread.Read | None = None) -> ccread.Read:
        if not subagent:
            seen.append(None if resume is None else resume.offset)
        return real(path, subagent=subagent, resume=resume)

    monkeypatch.setattr(ccread, "read", spy)
    return seen


def _lines(**kw: Any) -> list[bytes]:
    return [dumps(o).encode() + b"\n" for o in cc21.lines(**kw)]


def _same(path: Path) -> None:
    got = _fast(path)
    assert got is not None and got == _full(path)


def test_a_grown_transcript_is_parsed_from_where_the_last_pass_stopped(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    lines = _lines(grow=6)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:20]) + lines[20][:15])  # a line still being written
    _same(path)  # first look: a note only
    _same(path)  # second: the pass is kept
    kept = len(b"".join(lines[:20]))
    path.write_bytes(b"".join(lines[:30]))
    _same(path)
    path.write_bytes(b"".join(lines))
    _same(path)
    _same(path)  # unchanged since: the figures of that pass answer, no pass at all
    assert resumed == [None, None, kept, len(b"".join(lines[:30]))]


def _cached(tmp_path: Path, body: bytes) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(body)
    for _ in range(2):
        assert ccstatus.fast_facts(path) is not None
    return path


def test_a_truncated_transcript_is_read_whole_again(tmp_path: Path, resumed: list[int | None]) -> None:
    lines = _lines(grow=4)
    path = _cached(tmp_path, b"".join(lines))
    path.write_bytes(b"".join(lines[:25]))
    _same(path)
    assert resumed[-1] is None


def test_a_transcript_rewritten_in_place_is_read_whole_again(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    """Same inode, longer than before, but the bytes the cache describes are not the same."""
    lines = _lines(grow=4)
    path = _cached(tmp_path, b"".join(lines))
    other = b"".join(_lines(cwd="/home/u/elsewhere", grow=5))
    with open(path, "r+b") as fh:  # in place: the inode stays
        fh.write(other)
    _same(path)
    assert resumed[-1] is None
    assert _full(path)["session"]["cwd"] == "/home/u/elsewhere"


def test_a_transcript_replaced_by_another_file_is_read_whole_again(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    lines = _lines(grow=4)
    path = _cached(tmp_path, b"".join(lines))
    new = tmp_path / "new.jsonl"
    new.write_bytes(b"".join(lines) + b"".join(_lines(grow=1)[-3:]))
    os.replace(new, path)
    _same(path)
    assert resumed[-1] is None


@pytest.mark.parametrize(
    "damage",
    ["not json", "[]", '{"version": 1}', "lines-shape", "digest-types", "billing"],
)
def test_a_damaged_cache_is_ignored(tmp_path: Path, resumed: list[int | None], damage: str) -> None:
    lines = _lines(grow=4)
    path = _cached(tmp_path, b"".join(lines))
    cfile = cccache.cache_file(path)
    data = json.loads(cfile.read_bytes())
    if damage == "lines-shape":
        data["lines"][3] = ["user"]
        text = json.dumps(data)
    elif damage == "digest-types":
        d = next(v for v in data["lines"] if v[7] and v[7][0] == "a")
        d[7][5] = ["1", 2, 3, 4]  # usage that is not numbers
        text = json.dumps(data)
    elif damage == "billing":
        data["billing"]["offset"] = -5
        text = json.dumps(data)
    else:
        text = damage
    cfile.write_text(text)
    _same(path)
    assert resumed[-1] is None


def test_small_files_are_never_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_lines()))
    for _ in range(3):
        _same(path)
    assert not (tmp_path / "cache").exists()


def test_the_cache_keeps_no_secret_and_not_the_whole_text_a_call_sent(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    """What the cache keeps of a call or a failed result is redacted, and a call's input keeps
    in full only the keys ``status`` reads; the report read back from it is unchanged."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    body = "y" * 5000
    text = b"".join(_lines()).decode()
    text = text.replace('"pytest -q"', f'"pytest -q --token {token}"')
    text = text.replace("5434 != 5433", f"5434 != 5433 {token}", 1)
    text = text.replace('"old_string":"5434"', f'"old_string":"{body}"')
    assert text.count(token) == 2 and body in text
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    _same(path)
    _same(path)  # the pass is kept now
    cccache.figures_file(path).unlink()
    _same(path)  # and read back from the cache
    _same(path)  # and its figures
    assert resumed == [None, None, len(text.encode())]
    kept = b"".join(f.read_bytes() for f in (tmp_path / "cache").rglob("*.json"))
    assert b"pytest -q --token" in kept and token.encode() not in kept
    assert b"y" * 200 in kept and b"y" * 201 not in kept


def test_a_line_rewritten_in_the_middle_in_place_is_read_whole_again(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    lines = _lines(grow=400)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size > 3 * (1 << 16)  # the change sits away from both ends
    _same(path)
    _same(path)
    mid = next(i for i in range(len(lines) // 2, len(lines)) if b'"name":"Read"' in lines[i])
    data = path.read_bytes()
    at = len(b"".join(lines[:mid]))
    old = lines[mid]
    new = old.replace(b'"name":"Read"', b'"name":"Grep"', 1)
    assert len(new) == len(old) and new != old
    path.write_bytes(data[:at] + new + data[at + len(old):])
    _same(path)
    assert resumed == [None, None, None]


def test_a_cache_msgspec_cannot_read_is_read_by_json_and_still_resumes(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    """A call's input that held NaN is cached as NaN (msgspec refuses it; ``json`` reads it)."""
    objs = cc21.lines(grow=4)
    call = next(o for o in objs if o["type"] == "assistant" and "tool_use" in json.dumps(o))
    block = next(b for b in call["message"]["content"] if b["type"] == "tool_use")
    block["input"]["timeout"] = float("nan")
    lines = [dumps(o).encode() + b"\n" for o in objs]
    assert any(b"NaN" in ln for ln in lines)
    path = _cached(tmp_path, b"".join(lines[:-3]))
    assert b"NaN" in cccache.cache_file(path).read_bytes()
    path.write_bytes(b"".join(lines))
    _same(path)
    assert resumed[-1] == len(b"".join(lines[:-3]))


@pytest.mark.parametrize("change", ["none", "append", "rewrite", "damage", "tail"])
def test_the_figures_of_a_whole_pass_answer_only_for_the_same_bytes(
    tmp_path: Path, resumed: list[int | None], change: str
) -> None:
    """Unchanged (same inode, size and SHA-256): the kept figures answer and nothing is parsed;
    grown, rewritten in place, a damaged figures file or a line still being written: a pass."""
    lines = _lines(grow=4)
    path = _cached(tmp_path, b"".join(lines[:-2]))
    assert cccache.figures_file(path).exists()
    before = len(resumed)
    if change == "append":
        path.write_bytes(b"".join(lines))
    elif change == "rewrite":
        with open(path, "r+b") as fh:  # same inode, same size, other bytes
            fh.write(b"".join(lines[:-2]).replace(b'"Read"', b'"Grep"', 1))
    elif change == "damage":
        figures = cccache.figures_file(path)
        figures.write_bytes(figures.read_bytes().replace(b'"n_steps":', b'"n_steps":"', 1))
    elif change == "tail":
        path.write_bytes(b"".join(lines[:-2]) + lines[-2].rstrip(b"\n"))  # it parses: a step
    _same(path)
    assert len(resumed) == before + (change != "none")
    if change == "tail":  # a pass that read a line still being written keeps no figures:
        with open(path, "r+b") as fh:  # those of its complete lines would count that line
            fh.truncate(len(b"".join(lines[:-2])))
        _same(path)


def test_a_call_whose_input_the_cache_cuts_is_estimated_as_the_whole_input_it_sent(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    """The cache keeps 200 characters of what a call sent under keys ``status`` does not read;
    the context breakdown read back from it still counts all of it (it once counted the cut)."""
    objs = cc21.lines(grow=4)
    call = [o for o in objs if o["type"] == "assistant" and "tool_use" in json.dumps(o)][-1]
    block = next(b for b in call["message"]["content"] if b["type"] == "tool_use")
    block["input"]["content"] = "z" * 5000
    lines = [dumps(o).encode() + b"\n" for o in objs]
    at = next(i for i, ln in enumerate(lines) if b"z" * 5000 in ln) + 1
    path = _cached(tmp_path, b"".join(lines[:at]))
    assert b"z" * 201 not in cccache.cache_file(path).read_bytes()
    path.write_bytes(b"".join(lines))
    _same(path)
    assert resumed[-1] == len(b"".join(lines[:at]))


def test_no_figures_are_kept_when_a_touched_path_holds_a_secret(
    tmp_path: Path, resumed: list[int | None]
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = b"".join(_lines(grow=4)).decode()
    assert text.count('"file_path":"src/port.py"') == 1
    text = text.replace('"file_path":"src/port.py"', f'"file_path":"src/{token}/port.py"')
    path = _cached(tmp_path, text.encode())
    assert not cccache.figures_file(path).exists()
    assert ccstatus.fast_facts(path) is not None  # from the cached lines (paths redacted)
    kept = b"".join(f.read_bytes() for f in (tmp_path / "cache").rglob("*.json"))
    assert token.encode() not in kept
