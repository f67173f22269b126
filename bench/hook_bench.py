"""Git hook benchmark (issue 3): what the contextfork hooks add to a `git commit`, and resume time.

(1) In a repo of 2,000 tracked files, 20 `git commit`s with the pre-commit/post-commit hooks and
20 without, interleaved in the same run (the "without" commits point core.hooksPath at an empty
directory), each committing a one-line change. Prints both medians and the added milliseconds
(target: <= 250 ms added per commit).
(2) `contextfork resume` as a process on the export benchmark's repo shape (5,000 tracked,
200 modified, 50 renamed, 100 untracked): drift check + per-file drift + brief.

    python bench/hook_bench.py [--commits 20] [--files 2000] [--resume-runs 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_bench import ENV, build_repo, git


def build_small(root: Path, files: int) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for i in range(files):
        d = root / f"pkg{i % 40:02d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(15)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True)
    return (time.perf_counter() - t0) * 1000


def bench_hooks(base: Path, commits: int, files: int) -> tuple[float, float]:
    repo = base / "hooks-repo"
    build_small(repo, files)
    subprocess.run([sys.executable, "-m", "contextfork", "hooks", "install", "--git", "--keep", "20"],
                   cwd=repo, env=ENV, check=True, capture_output=True)
    empty = base / "no-hooks"
    empty.mkdir()
    target = repo / "pkg00" / "mod00000.py"
    with_hooks, without = [], []
    for i in range(commits * 2):
        hooked = i % 2 == 1
        with target.open("a") as fh:
            fh.write(f"# edit {i}\n")
        git(repo, "add", str(target.relative_to(repo)))
        cfg = [] if hooked else ["-c", f"core.hooksPath={empty}"]
        ms = timed(["git", *cfg, "commit", "-q", "-m", f"c{i}"], repo)
        (with_hooks if hooked else without).append(ms)
    notes = git(repo, "notes", "--ref=contextfork", "list").decode().count("\n")
    assert notes == commits, f"expected {commits} notes, found {notes}"
    return statistics.median(with_hooks), statistics.median(without)


def bench_resume(base: Path, runs: int) -> float:
    repo = base / "resume-repo"
    build_repo(repo)
    subprocess.run([sys.executable, "-m", "contextfork", "export"], cwd=repo, env=ENV, check=True,
                   capture_output=True)
    cmd = [sys.executable, "-m", "contextfork", "resume", "--no-mark-consumed", "--json"]
    timed(cmd, repo)  # warm the OS caches once
    return statistics.median(timed(cmd, repo) for _ in range(runs))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--resume-runs", type=int, default=7)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="cf-hook-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        hooked, plain = bench_hooks(base, args.commits, args.files)
        resume_ms = bench_resume(base, args.resume_runs)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"repo: {args.files} tracked files, {args.commits} commits each way (interleaved)")
    print(f"git commit without hooks: median {plain:7.1f} ms")
    print(f"git commit with hooks:    median {hooked:7.1f} ms")
    print(f"added per commit:                {hooked - plain:7.1f} ms  (target <= 250 ms)")
    print(f"contextfork resume (5,000 files, 200 modified, 50 renamed, 100 untracked): "
          f"median {resume_ms:7.1f} ms over {args.resume_runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
