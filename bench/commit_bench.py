"""Pre-commit checkpoint benchmark (issues 15, 27; prints figures, not a test).

    python bench/commit_bench.py [--runs 9] [--compare SRC]

`git commit` with contextfork's git hooks installed (pre-commit exports a checkpoint package,
post-commit notes it) on export_bench's 5,000-file repository, against `git commit` with no
hooks, interleaved: cold (CONTEXTFORK_SERVER=off) and served by a warm command server. Each
commit stages one more edited file; the hooks' added time is the difference of medians. CPU is
user + sys of the commit and everything it ran (the hook scripts and their git calls); a served
checkpoint's own work runs in the server, so its CPU column is the client's only.

``--compare SRC`` also commits, interleaved, in a copy of the repository whose hooks run the
contextfork of another source tree (``PYTHONPATH=SRC``, e.g. a checkout of main), with a
server of its own: before/after figures under the same load. The last lines count the git
processes one checkpoint starts (``GIT_TRACE``, the commit's own excluded).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
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

SRC = str(Path(__file__).resolve().parents[1])


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def _commit(root: Path, i: int, env: dict[str, str]) -> tuple[float, float]:
    (root / "scratch" / f"note{i % 100:03d}.txt").write_text(f"edit {i}\n")
    git(root, "add", "scratch")
    t, c = time.perf_counter(), _cpu()
    subprocess.run(["git", "commit", "-q", "-m", f"c{i}"], cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - t, _cpu() - c


def _git_calls(root: Path, i: int, env: dict[str, str], trace: Path) -> int:
    """git processes one commit starts, less the commit's own (one: `git commit`)."""
    trace.unlink(missing_ok=True)
    _commit(root, i, {**env, "GIT_TRACE": str(trace)})
    lines = trace.read_text(errors="replace").splitlines()
    return sum(1 for ln in lines if "trace: built-in: git" in ln) - 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--compare", type=Path, help="source tree of another contextfork to run too")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-commit-bench-"))
    bare = tmp / "bare"
    trees = {"": SRC} | ({" (compare)": str(args.compare.resolve())} if args.compare else {})
    stack = contextlib.ExitStack()
    os.chdir(tmp)  # `python -m` puts the working directory first on sys.path: not a source tree
    try:
        build_repo(bare)
        rows: dict[str, list[tuple[float, float]]] = {"no hooks": []}
        envs: dict[str, dict[str, str]] = {"no hooks": ENV}
        repos: dict[str, Path] = {"no hooks": bare}
        for n, (tag, src) in enumerate(trees.items()):
            hooked = tmp / f"hooked{n}"
            shutil.copytree(bare, hooked, symlinks=True)
            cold = {**ENV, "PYTHONPATH": src}
            subprocess.run([sys.executable, "-m", "contextfork", "hooks", "install", "--git"],
                           cwd=hooked, env=cold, check=True, capture_output=True)  # fmt: skip
            served = stack.enter_context(private_server(cold, tmp / f"srv{n}"))
            for key, env in ((f"hooks, cold{tag}", cold), (f"hooks, served{tag}", served)):
                rows[key], envs[key], repos[key] = [], env, hooked
        os.sync()
        for i in range(args.runs + 1):
            for k, key in enumerate(rows):  # the first round warms the caches
                took = _commit(repos[key], len(rows) * i + k, envs[key])
                if i:
                    rows[key].append(took)
        base = [statistics.median(x[j] for x in rows["no hooks"]) * 1000 for j in (0, 1)]
        print(f"{'':34s} {'wall':>8s} {'cpu':>8s}   added by the hooks (wall, cpu)")
        for key, xs in rows.items():
            wall, cpu = (statistics.median(x[j] for x in xs) * 1000 for j in (0, 1))
            extra = "" if key == "no hooks" else f"   +{wall - base[0]:.0f} ms, +{cpu - base[1]:.0f} ms"
            print(f"git commit, {key:23s} {wall:6.0f}ms {cpu:6.0f}ms{extra}")
        at = args.runs * len(rows) + len(rows)
        for key in rows:
            if "cold" in key:
                calls = _git_calls(repos[key], at, envs[key], tmp / "trace.txt")
                print(f"git processes per checkpoint, {key}: {calls}")
                at += 1
        print(f"runs: {args.runs}; load average {os.getloadavg()[0]:.1f}")
    finally:
        stack.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
