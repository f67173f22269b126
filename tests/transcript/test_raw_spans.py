"""A loaded session keeps its raw lines as verified spans of the file, not as text (issue 27).

The cold store's payloads, ``render --restore`` and a fork's lines are read back from the file
on demand; each span is checked against the digest of the bytes that were parsed, so a
transcript rewritten after loading is one clear error (exit 3) and an appended one still reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextfork.errors import ExitCode, IntegrityError
from contextfork.transcript import load_session
from tests.transcript.builders import CC, dumps, text, tool_use, write_jsonl
from tests.transcript.test_claude_code import build_session_file

ROOT = Path(__file__).resolve().parents[2]


def test_raw_lines_are_spans_read_back_byte_exact(tmp_path: Path) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    data = path.read_bytes()
    s = load_session(path)
    lines = [r for st in s.steps for r in st.raw]
    assert lines and all(r._text is None for r in lines)  # no line's text is held
    for st in s.steps:
        assert st.raw_bytes() == b"".join(data[r.offset : r.offset + r.length] for r in st.raw)
    for r in lines:
        assert r.text == data[r.offset : r.offset + r.length].decode("utf-8")
        assert json.loads(r.text)["uuid"]


def test_a_transcript_rewritten_after_loading_is_one_clear_error(tmp_path: Path) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    s = load_session(path)
    path.write_bytes(path.read_bytes().replace(b"fix the bug", b"fix the BUG"))  # same length
    with pytest.raises(IntegrityError, match="changed after it was read") as err:
        s.steps[0].raw_bytes()
    assert err.value.exit_code == ExitCode.INTEGRITY
    path.unlink()
    with pytest.raises(IntegrityError, match="can no longer be read"):
        s.steps[0].raw[0].data()


def test_a_transcript_appended_to_after_loading_still_reads_back(tmp_path: Path) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    s = load_session(path)
    before = [st.raw_bytes() for st in s.steps]
    with path.open("a", encoding="utf-8") as fh:  # the harness writes on while we read
        fh.write(dumps({"type": "progress", "uuid": "late", "parentUuid": "u18"}) + "\n")
    assert [st.raw_bytes() for st in s.steps] == before


def _big_session(path: Path, steps: int) -> Path:
    cc = CC()
    recs: list[object] = [cc.user("start")]
    for i in range(steps):
        recs.append(cc.assistant(f"m{i}", [text("looking " * 20),
                                          tool_use(f"c{i}", "Bash", command=f"cat f{i}")]))
        recs.append(cc.progress())
        recs.append(cc.result(f"c{i}", f"line {i} of the output ü\n" * 60))
    return write_jsonl(path, recs)


_MEASURE = """
import sys, tracemalloc
from contextfork.transcript import load_session
load_session(sys.argv[2])  # every import done before measuring
tracemalloc.start()
session = load_session(sys.argv[1])
print(tracemalloc.get_traced_memory()[1])
"""


def test_loading_a_long_session_peaks_under_three_times_the_file(tmp_path: Path) -> None:
    """Measured in a fresh interpreter: the peak of the Python heap while a 3.2 MB session is
    read stays under three times its size (2.1 times: the session built, plus the skeletons of
    its lines; holding every line's text and parsed object at once made it 4.1 times)."""
    path = _big_session(tmp_path / "big.jsonl", 700)
    small = build_session_file(tmp_path / "small.jsonl")
    size = path.stat().st_size
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(path), str(small)], capture_output=True,
                         text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})  # fmt: skip
    peak = int(out.stdout.split()[-1])
    assert peak < 3 * size, f"peak {peak:,} B for a {size:,} B transcript"


def test_a_held_session_of_an_unchanged_file_is_not_parsed_again(tmp_path: Path) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    first = load_session(path)
    assert load_session(path) is first
    assert load_session(path, include_subagents=False) is not first  # another reading
    with path.open("a", encoding="utf-8") as fh:  # grown: read again
        fh.write(dumps({"type": "progress", "uuid": "late", "parentUuid": "u18"}) + "\n")
    again = load_session(path)
    assert again is not first and again.steps == first.steps
