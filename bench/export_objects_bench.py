"""Export and the user's object store (issue 27 item 4): a big untracked file over the cap.

Two repos with the same tracked content (``--tracked`` files, a few modified, a few small
untracked notes); one also holds one ``--big-mb`` MB untracked file (random bytes, so over the
1 MiB snapshot cap: the package records it, not captured). Prints

- the bytes the first export adds to ``.git/objects`` of each repo (target for the big one: 0),
- the median wall time, CPU time (the process and every child) and peak RSS (the largest
  process) of a later export of each repo, interleaved, and the ratio big/plain (target <= 1.2),
- the first export of a fresh copy of the plain repo (every index entry's stat data stale, as
  after ``cp -r``) against a later one: status and diff should not both re-hash the tree.

    python bench/export_objects_bench.py [--runs 7] [--tracked 2000] [--big-mb 200]

Run it with ``PYTHONPATH`` at the source tree to measure (a checkout of main for the figures
before a change).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "CONTEXTFORK_SERVER": "off",
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
}  # fmt: skip

# Runs one command and prints its wall time, the CPU of it and its children, and the peak RSS
# of the largest of them (RUSAGE_CHILDREN counts every waited-for descendant).
PROBE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
    "w = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(w, r.ru_utime + r.ru_stime, r.ru_maxrss)\n"
)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def build(root: Path, tracked: int) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for i in range(tracked):
        d = root / f"pkg{i % 20:02d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(
            "".join(f"def f{j}_{i}(x):\n    return x + {j}\n" for j in range(20))
        )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    for p in sorted(root.glob("pkg00/*.py"))[:10]:
        with p.open("a") as fh:
            fh.write("VALUE = 42\n")
    (root / "notes").mkdir()
    for i in range(10):
        (root / "notes" / f"n{i}.txt").write_text(f"note {i}\n" * 20)


def objects_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root / ".git" / "objects"):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def export(root: Path) -> tuple[float, float, int]:
    cmd = [sys.executable, "-c", PROBE, sys.executable, "-m", "contextfork", "export"]
    out = subprocess.run(cmd, cwd=root, env=ENV, check=True, capture_output=True, text=True)
    wall, cpu, rss = out.stdout.split()
    return float(wall), float(cpu), int(rss)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--tracked", type=int, default=2000)
    ap.add_argument("--big-mb", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cf-objects-bench-"))
    try:
        plain, big, fresh = tmp / "plain", tmp / "big", tmp / "fresh"
        build(plain, args.tracked)
        shutil.copytree(plain, big, symlinks=True)
        git(big, "status")  # the copy's index gets fresh stat data, as the original has
        with (big / "big.bin").open("wb") as fh:
            for _ in range(args.big_mb):
                fh.write(os.urandom(1 << 20))
        os.sync()
        print(f"repos: {args.tracked} tracked files, 10 modified, 10 small untracked; "
              f"big also has one {args.big_mb} MB untracked file")  # fmt: skip
        for name, root in (("plain", plain), ("big", big)):
            before = objects_bytes(root)
            wall, cpu, rss = export(root)
            added = objects_bytes(root) - before
            print(f"first export, {name:5s}: +{added:>11,d} bytes in .git/objects "
                  f"({wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms cpu, {rss / 1024:.0f} MB peak)")
        runs: dict[str, list[tuple[float, float, int]]] = {"plain": [], "big": []}
        for _ in range(args.runs):
            runs["plain"].append(export(plain))
            runs["big"].append(export(big))
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
        for k, (w, c, r) in med.items():
            print(f"later export, {k:5s}: {w * 1000:6.0f} ms wall {c * 1000:6.0f} ms cpu "
                  f"{r / 1024:6.0f} MB peak (median of {args.runs})")
        print(f"ratio big/plain: wall {med['big'][0] / med['plain'][0]:.2f}, "
              f"cpu {med['big'][1] / med['plain'][1]:.2f} (target <= 1.2)")
        firsts, laters = [], []
        for _ in range(max(3, args.runs // 2)):
            shutil.rmtree(fresh, ignore_errors=True)
            shutil.copytree(plain, fresh, symlinks=True)  # new inodes: every entry stat-dirty
            os.sync()
            firsts.append(export(fresh))
            laters.append(export(fresh))
        fw, fc = (statistics.median(r[j] for r in firsts) * 1000 for j in (0, 1))
        lw, lc = (statistics.median(r[j] for r in laters) * 1000 for j in (0, 1))
        print(f"fresh copy of plain: first export {fw:.0f} ms wall {fc:.0f} ms cpu; "
              f"the next {lw:.0f} ms wall {lc:.0f} ms cpu")
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
