"""Export benchmark (issues 2, 15): contextfork export and validate as processes vs the raw git
work export cannot avoid.

Repo shape: 5,000 tracked files, 200 modified (some binary), 50 renamed, 100 untracked.
Prints medians of (a) `contextfork export` as a whole process, (b) the raw work
(`git status --porcelain=v2 -z`, `git diff HEAD --binary`, reading + hashing the untracked
files), (v) `contextfork validate` of the package just exported, and the ratios a/b and v/b
(targets, issue 15: both <= 2.5), all interleaved in one run. (a) and (v) are measured twice:
served by the warm command server (what a user who ran `contextfork server enable` gets from
the second command on, contextfork/server) and cold (``CONTEXTFORK_SERVER=off``: a whole interpreter start per command). Each is measured twice: wall
time, and CPU time (user + sys of the process and every child it ran). On a shared machine the
wall times swing with the load; the CPU ratios stay put, so both are printed.

    python bench/export_bench.py [--runs 15] [--tracked 5000] [--keep DIR] [--compare SRC] [--index-age S]

``--compare SRC`` also runs the contextfork of another source tree (e.g. a checkout of main),
interleaved with this one, for before/after figures taken under the same load.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
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
from served import private_server

# PYTHONDONTWRITEBYTECODE is dropped: an installed contextfork has its bytecode, and with it set
# (some sandboxes set it) every run would compile the package from source, a third of its time.
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PYTHONDONTWRITEBYTECODE"},
    "CONTEXTFORK_SERVER": "off",
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


def _cpu() -> float:
    """CPU seconds (user + sys) of this process and its waited-for children so far."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def raw_work(root: Path) -> tuple[float, float]:
    t, c = time.perf_counter(), _cpu()
    status = subprocess.run(["git", "status", "--porcelain=v2", "-z", "--untracked-files=all"], cwd=root, env=ENV, check=True, capture_output=True).stdout
    subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=root, env=ENV, check=True, capture_output=True)
    for item in status.split(b"\0"):
        if item.startswith(b"? "):
            hashlib.sha256((root / item[2:].decode()).read_bytes()).hexdigest()
    return time.perf_counter() - t, _cpu() - c


INDEX_AGE = 0.0


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU time of one command. The CPU of a served command is counted in the server's
    child, not here: for those rows only the wall time is meaningful (printed CPU: the client's)."""
    if INDEX_AGE:
        then = time.time() - INDEX_AGE
        os.utime(cwd / ".git" / "index", (then, then))
    t, c = time.perf_counter(), _cpu()
    subprocess.run(cmd, cwd=cwd, env=env or ENV, check=True, capture_output=True)
    return time.perf_counter() - t, _cpu() - c


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--compare", type=Path, help="source tree of another contextfork to run too")
    ap.add_argument("--tracked", type=int, default=5000,
                    help="tracked files (modified, renamed and untracked scale with it)")
    ap.add_argument("--index-age", type=float, default=0,
                    help="a repo nobody ran git in for this many seconds: every file is dated "
                         "back further still, and .git/index this far back before each command")  # fmt: skip
    args = ap.parse_args()
    global INDEX_AGE
    INDEX_AGE = args.index_age
    tmp = Path(tempfile.mkdtemp(prefix="cf-export-bench-"))
    root = tmp / "repo"
    stack = contextlib.ExitStack()
    try:
        t0 = time.perf_counter()
        n = args.tracked
        build_repo(root, n, max(1, n // 25), max(1, n // 100), max(1, n // 50))
        if INDEX_AGE:  # older than the index, as files are: git's racy-entry check stays quiet
            then = time.time() - INDEX_AGE - 60
            for p in root.rglob("*"):
                if ".git" not in p.parts and not p.is_symlink():
                    os.utime(p, (then, then))
        # The build's own writes (5,000 files) must not be what the first runs flush: an
        # export's syncfs (contextfork.atomic) would wait for them.
        os.sync()
        print(f"built repo in {time.perf_counter() - t0:.1f}s: {n} tracked, {max(1, n // 25)} modified, "
              f"{max(1, n // 100)} renamed, {max(1, n // 50)} untracked")
        exe = [sys.executable, "-m", "contextfork"]
        timed([*exe, "export"], root)  # warm the OS cache and .git/info/exclude
        raw_work(root)
        served_env = stack.enter_context(private_server(ENV, tmp / "srv"))
        timed([*exe, "export"], root, served_env)
        other = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "from contextfork.entry import main; sys.exit(main())", str(args.compare)]  # fmt: skip
        if args.compare:
            timed([*other, "export"], root)
        a: list[tuple[float, float]] = []
        b: list[tuple[float, float]] = []
        v: list[tuple[float, float]] = []
        sa: list[tuple[float, float]] = []
        sv: list[tuple[float, float]] = []
        oa: list[tuple[float, float]] = []
        ov: list[tuple[float, float]] = []
        for _ in range(args.runs):  # interleaved so all of them see the same machine state
            b.append(raw_work(root))
            a.append(timed([*exe, "export"], root))
            v.append(timed([*exe, "validate"], root))
            sa.append(timed([*exe, "export"], root, served_env))
            sv.append(timed([*exe, "validate"], root, served_env))
            if args.compare:
                oa.append(timed([*other, "export"], root))
                ov.append(timed([*other, "validate"], root))

        def med(xs: list[tuple[float, float]], i: int) -> float:
            return statistics.median(x[i] for x in xs) * 1000

        rows = [("(a) export, served", sa), ("(a0) export, cold process", a),
                ("(b) raw git status+diff+hash", b),
                ("(v) validate, served", sv), ("(v0) validate, cold process", v)]  # fmt: skip
        ratios = [("ratio a/b (target <= 2.5)", sa), ("ratio v/b (target <= 2.5)", sv),
                  ("ratio a0/b (cold)", a), ("ratio v0/b (cold)", v)]  # fmt: skip
        if args.compare:
            rows += [(f"(a') export of {args.compare}", oa), (f"(v') validate of {args.compare}", ov)]
            ratios += [("ratio a'/b", oa), ("ratio v'/b", ov)]
        print(f"{'':34s} {'wall':>8s} {'cpu':>8s}")
        for label, xs in rows:
            print(f"{label:34s} {med(xs, 0):6.0f}ms {med(xs, 1):6.0f}ms")
        for label, xs in ratios:
            cpu = "" if xs in (sa, sv) else f" {med(xs, 1) / med(b, 1):8.2f}"
            print(f"{label:34s} {med(xs, 0) / med(b, 0):8.2f}{cpu}")
        print("(served rows: wall only; the CPU column is the client's, the work runs in the server)")
        print(f"runs: {args.runs}; python start-up alone: {timed([sys.executable, '-c', 'pass'], root)[0] * 1000:.0f} ms; "
              f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        if args.keep:
            shutil.copytree(root, args.keep, symlinks=True)
    finally:
        stack.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
