"""Export benchmark (issue 2): contextfork export as a process vs the raw git work it cannot avoid.

Repo shape: 5,000 tracked files, 200 modified (some binary), 50 renamed, 100 untracked.
Prints medians of (a) `contextfork export` as a whole process, (b) the raw work
(`git status --porcelain=v2 -z`, `git diff HEAD --binary`, reading + hashing the untracked
files), the ratio a/b, and `contextfork validate` time.

    python bench/export_bench.py [--runs 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
}  # fmt: skip


def git(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True).stdout


def build_repo(root: Path, tracked: int = 5000, modified: int = 200, renamed: int = 50, untracked: int = 100) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for i in range(tracked):
        d = root / f"pkg{i % 50:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        if i % 40 == 0:
            (d / f"asset{i:05d}.bin").write_bytes(os.urandom(2048))
        else:
            (d / f"mod{i:05d}.py").write_text("".join(f"def f{j}_{i}(x):\n    return x + {j}\n" for j in range(20)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    for p in files[:modified]:
        if p.suffix == ".bin":
            p.write_bytes(os.urandom(2048))
        else:
            with p.open("a") as fh:
                fh.write("\n# modified for the benchmark\nVALUE = 42\n")
    for p in files[modified : modified + renamed]:
        rel = p.relative_to(root)
        git(root, "mv", str(rel), str(rel.with_name("renamed_" + rel.name)))
    git(root, "add", "-u")  # some changes staged
    for p in files[:20]:
        if p.exists() and p.suffix == ".py":
            with p.open("a") as fh:
                fh.write("# and an unstaged edit on top\n")
    (root / "scratch").mkdir()
    for i in range(untracked):
        (root / "scratch" / f"note{i:03d}.txt").write_text(f"untracked note {i}\n" * 30)


def raw_work(root: Path) -> float:
    t = time.perf_counter()
    status = subprocess.run(["git", "status", "--porcelain=v2", "-z", "--untracked-files=all"], cwd=root, env=ENV, check=True, capture_output=True).stdout
    subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=root, env=ENV, check=True, capture_output=True)
    for item in status.split(b"\0"):
        if item.startswith(b"? "):
            hashlib.sha256((root / item[2:].decode()).read_bytes()).hexdigest()
    return time.perf_counter() - t


def timed(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-export-bench-"))
    root = tmp / "repo"
    try:
        t0 = time.perf_counter()
        build_repo(root)
        print(f"built repo in {time.perf_counter() - t0:.1f}s: 5000 tracked, 200 modified, 50 renamed, 100 untracked")
        exe = [sys.executable, "-m", "contextfork"]
        timed([*exe, "export"], root)  # warm the OS cache and .git/info/exclude
        raw_work(root)
        a, b, v = [], [], []
        for _ in range(args.runs):  # interleaved so both see the same machine state
            b.append(raw_work(root))
            a.append(timed([*exe, "export"], root))
            v.append(timed([*exe, "validate"], root))
        ma, mb, mv = statistics.median(a), statistics.median(b), statistics.median(v)
        print(f"(a) contextfork export (process):  median {ma * 1000:.0f} ms over {args.runs} runs")
        print(f"(b) raw git status+diff+hash:      median {mb * 1000:.0f} ms")
        print(f"ratio a/b:                         {ma / mb:.2f}  (target <= 1.5)")
        print(f"contextfork validate (process):    median {mv * 1000:.0f} ms")
        print(f"python start-up alone:             {timed([sys.executable, '-c', 'pass'], root) * 1000:.0f} ms")
        if args.keep:
            shutil.copytree(root, args.keep, symlinks=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
