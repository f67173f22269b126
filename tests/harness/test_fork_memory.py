"""``fork`` lets the session's blocks go as its fold builds each node, and its transients stay
small (issue 27).

What fork reads of the blocks (subagent units, the compaction summary, the context and window
tokens, the export's seed) is taken before the fold; after it fork reads each step's raw lines
and identity only. Measured in a fresh interpreter with the tokenizer and every import loaded
first (a small fork in a repository of its own).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, make_repo
from tests.transcript.builders import CC, text, tool_use, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

_MEASURE = """
import sys, tracemalloc
from pathlib import Path
import contextfork.harness.briefs as briefs
from contextfork.harness.fork import fork_session
from contextfork.tokens import count_tokens
count_tokens("warm")
fork_session(Path(sys.argv[3]), Path(sys.argv[2]))  # every import done
real, held = briefs.fold_and_export, []

def folded(*args, **kwargs):
    info = real(*args, **kwargs)
    held.append(tracemalloc.get_traced_memory()[0])
    return info

briefs.fold_and_export = folded
tracemalloc.start()
res = fork_session(Path(sys.argv[4]), Path(sys.argv[1]))
assert res.data["stubbed"], res.data
print(held[0], tracemalloc.get_traced_memory()[1])
"""


def _session(path: Path, steps: int, result_lines: int, session_id: str) -> Path:
    cc = CC(session_id=session_id)
    recs: list[object] = [cc.user("start")]
    for i in range(steps):
        recs.append(cc.assistant(f"m{i}", [text(f"reading part {i}"),
                                          tool_use(f"c{i}", "Bash", command=f"cat part{i}.log")]))
        recs.append(cc.result(f"c{i}", f"part {i}\n" + "an entry of the log, as written\n" * result_lines))
    return write_jsonl(path, recs)


def _measured(script: str, repo: Repo, tmp_path: Path) -> tuple[int, list[int]]:
    """(the big transcript's size, the numbers ``script`` prints) for a fork of a 0.43 MB
    session into ``repo``, in a fresh interpreter warmed by a fork of a small one."""
    big = _session(tmp_path / "big.jsonl", 8, 800, "11111111-2222-4333-8444-555555555555")
    small = _session(tmp_path / "small.jsonl", 2, 200, "11111111-2222-4333-8444-666666666666")
    warm = make_repo(tmp_path / "warm")
    env = {"PYTHONPATH": str(ROOT), "HOME": str(Path.home()), "PATH": os.environ.get("PATH", ""),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", script, str(big), str(small), str(warm.path),
                          str(repo.path)], capture_output=True, text=True, cwd=ROOT, check=False,
                         env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return big.stat().st_size, [int(x) for x in out.stdout.split()]


def test_fork_lets_the_blocks_go_as_it_folds_and_peaks_under_three_and_a_half_times_the_file(
    repo: Repo, tmp_path: Path
) -> None:
    """0.43 MB of transcript (8 steps of 26 KB results, every one stubbed): once folded, fork
    holds 0.21 times the file (0.64 while it kept every block to the end), and its heap peaks at
    2.7 times, most of it fixed costs (4.3 with a new megabyte chunk per read of the
    transcript's hash, two at once)."""
    size, out = _measured(_MEASURE, repo, tmp_path)
    held, peak = out[-2:]
    assert held < 0.4 * size, f"held {held:,} B after the fold, for a {size:,} B transcript"
    assert peak < 3.5 * size, f"peak {peak:,} B for a {size:,} B transcript"


_MEASURE_ROLE = """
import sys, tracemalloc
from pathlib import Path
import contextfork.checkpoint as checkpoint
import contextfork.slice.build as build
from contextfork.slice.fork import fork_role
from contextfork.tokens import count_tokens
count_tokens("warm")
fork_role(Path(sys.argv[3]), Path(sys.argv[2]), "coder")  # every import done
real, held = build.slice_for, []

def sliced(*args, **kwargs):
    held.append(tracemalloc.get_traced_memory()[0])
    return real(*args, **kwargs)

build.slice_for = sliced
tracemalloc.start()
res = fork_role(Path(sys.argv[4]), Path(sys.argv[1]), "coder")
assert res.data["slice_chars"], res.data
print(held[0])
"""


def test_fork_role_lets_the_parent_go_before_it_cuts_the_slice(repo: Repo, tmp_path: Path) -> None:
    """``fork --role`` folds the parent with ``release`` and drops it: the slice is read from
    the store. Held when the slice is cut: 0.13 times the file (0.67 while it kept the parent;
    a 55 MB parent peaked at 2.09 bytes of RSS per transcript byte, 1.99 now)."""
    size, out = _measured(_MEASURE_ROLE, repo, tmp_path)
    held = out[-1]
    assert held < 0.4 * size, f"held {held:,} B when the slice was cut, for a {size:,} B transcript"
