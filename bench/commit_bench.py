"""Pre-commit checkpoint benchmark (issue 15; prints figures, not a test).

    python bench/commit_bench.py [--runs 9]

`git commit` with contextfork's git hooks installed (pre-commit exports a checkpoint package,
post-commit notes it) on export_bench's 5,000-file repository, against `git commit` with no
hooks, interleaved: cold (CONTEXTFORK_SERVER=off) and served by a warm command server. Each
commit stages one more edited file; the hooks' added time is the difference of medians.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_bench import ENV, build_repo, git
from served import private_server


def _commit(root: Path, i: int, env: dict[str, str]) -> float:
    (root / "scratch" / f"note{i % 100:03d}.txt").write_text(f"edit {i}\n")
    git(root, "add", "scratch")
    t = time.perf_counter()
    subprocess.run(["git", "commit", "-q", "-m", f"c{i}"], cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-commit-bench-"))
    hooked, bare = tmp / "hooked", tmp / "bare"
    cold = {**ENV, "CONTEXTFORK_SERVER": "off"}
    stack = contextlib.ExitStack()
    try:
        build_repo(hooked)
        shutil.copytree(hooked, bare, symlinks=True)
        exe = [sys.executable, "-m", "contextfork"]
        subprocess.run([*exe, "hooks", "install", "--git"], cwd=hooked, env=cold, check=True, capture_output=True)
        served = stack.enter_context(private_server(ENV, tmp / "srv"))
        os.sync()
        rows: dict[str, list[float]] = {"no hooks": [], "hooks, cold": [], "hooks, served": []}
        for i in range(args.runs + 1):
            times = (_commit(bare, i, cold), _commit(hooked, 2 * i, cold), _commit(hooked, 2 * i + 1, served))
            if i:  # the first round warms the caches
                for key, dt in zip(rows, times, strict=True):
                    rows[key].append(dt)
        base = statistics.median(rows["no hooks"]) * 1000
        for key, xs in rows.items():
            med = statistics.median(xs) * 1000
            extra = "" if key == "no hooks" else f"   (+{med - base:.0f} ms for the checkpoint)"
            print(f"git commit, {key:14s} median {med:6.0f} ms{extra}")
        print(f"runs: {args.runs}; load average {os.getloadavg()[0]:.1f}")
    finally:
        stack.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
