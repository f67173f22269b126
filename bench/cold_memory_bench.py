"""Peak memory of whole-store commands on a large cold store (prints figures; not a test).

    python bench/cold_memory_bench.py [--nodes 100000] [--store DIR]

Builds a synthetic store with ``cold_bench.build_bulk`` (or reuses ``--store`` when it already
holds nodes), then runs ``contextfork fold validate`` and ``contextfork fold index --rebuild``
as real subprocesses under ``/usr/bin/time -v`` and prints each one's peak RSS ("Maximum
resident set size") and wall time. Target (issue 13 item 11): at most 200 MB each at 100k nodes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from cold_bench import build_bulk  # noqa: E402


def peak(cmd: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """(peak RSS in MB, wall seconds, CPU seconds, exit code) of one command under time -v."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=cwd, capture_output=True, text=True,
                          check=False)  # fmt: skip
    wall = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    return rss, wall, cpu, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--store", type=Path, default=None, help="repo dir to build in / reuse")
    ap.add_argument("--only", default="validate,index --rebuild,validate", help="fold subcommands")
    args = ap.parse_args()
    repo = args.store or Path(tempfile.mkdtemp(prefix="cold-mem-"))
    store = repo / ".contextfork" / "cold" / "bench"
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # the CLI wants a real repo
    if not (store / "cold_nodes").is_dir() or not any((store / "cold_nodes").iterdir()):
        print(f"building {args.nodes} nodes in {store} …", flush=True)
        print(f"  built in {build_bulk(store, args.nodes):.0f} s", flush=True)
    n = sum(1 for _ in (store / "cold_nodes").iterdir())
    base = [sys.executable, "-m", "contextfork", "fold"]
    for name in args.only.split(","):
        cmd = [*base, *name.split(), "--session", "bench"]
        rss, wall, cpu, code = peak(cmd, repo)
        print(f"{n} nodes: `contextfork fold {name}` peak RSS {rss:.0f} MB, wall {wall:.1f} s, "
              f"CPU {cpu:.1f} s, exit {code} (load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
