"""``fold session`` holds one node at a time, not every node it built (issue 27).

Nodes are built outside the store lock, parked (compressed, in an anonymous scratch file) until
the lock is held, then written and indexed one at a time; the fold keeps only each node's
figures. Measured in a fresh interpreter with the tokenizer and every import loaded first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.transcript.builders import CC, text, tool_use, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

_MEASURE = """
import sys, tracemalloc
from pathlib import Path
from contextfork.cold.api import fold_session
from contextfork.tokens import count_tokens
count_tokens("warm")
fold_session(Path(sys.argv[2]), store_dir=Path(sys.argv[3]) / "warm")  # every import done
tracemalloc.start()
res = fold_session(Path(sys.argv[1]), store_dir=Path(sys.argv[3]) / "big")
assert res.data["written"] == res.data["steps"], res.data
print(tracemalloc.get_traced_memory()[1])
"""


def _session(path: Path, steps: int, result_lines: int) -> Path:
    cc = CC()
    recs: list[object] = [cc.user("start")]
    for i in range(steps):
        recs.append(cc.assistant(f"m{i}", [text(f"reading part {i}"),
                                          tool_use(f"c{i}", "Bash", command=f"cat part{i}.log")]))
        recs.append(cc.result(f"c{i}", "".join(f"{i}:{n} entry value={n * 7919 % 1000003}\n"
                                               for n in range(result_lines))))  # fmt: skip
    return write_jsonl(path, recs)


def test_folding_a_session_peaks_under_four_times_the_transcript(tmp_path: Path) -> None:
    """0.8 MB of transcript (24 steps of 18 KB results): the fold's heap peaks at 2.1 times the
    file, most of it fixed costs (the session, one node being built, the index); holding every
    built node and every line's text made it 8.6 times."""
    big = _session(tmp_path / "big.jsonl", 24, 600)
    small = _session(tmp_path / "small.jsonl", 2, 5)
    size = big.stat().st_size
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(big), str(small), str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, check=False,
                         env={"PYTHONPATH": str(ROOT), "HOME": str(Path.home())})  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    peak = int(out.stdout.split()[-1])
    assert peak < 4 * size, f"peak {peak:,} B for a {size:,} B transcript"
