"""Benchmark telemetry as whole processes against ccusage on the same Claude Code session.

    python bench/telemetry_bench.py [--transcript F | --chain N] [--runs 15]

Runs, interleaved (one of each per round, so load changes hit them all alike), and prints the
median wall time and median CPU time (user + sys of the process and its children) of
  contextfork status --json --transcript F        (cwd: a fresh one-commit git repo; cold: an
                                                  empty cache; warm: its pass of F cached)
  contextfork statusline                          (cold: empty cache; warm: cache primed)
  npx ccusage session --json --offline            (ccusage@20.0.24, F in a temp CLAUDE_CONFIG_DIR)
  ccusage session --json --offline                (its bin: a node launcher that runs ...)
  @ccusage/ccusage-<os>-<arch>/bin/ccusage        (... this static native binary, direct)
(``--floor``: and what no Python ``status`` can skip: the interpreter reading F, splitting it and
decoding each line with msgspec, into status's struct and into a one-field one, nothing else)
with the ratios, and checks that our billing totals equal ccusage's. ``--chain N`` benchmarks
the chained N-copy session of bench/transcript_memory_bench.py (20: 55 MB) instead of F.
Targets: status <= 400 ms and warm statusline <= 150 ms on the 2.8 MB session (issue 4), both
faster than ccusage; status no slower than ``ccusage session`` at 55 MB (issue 27).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parents[1] / "shared/data/transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CCUSAGE_VERSION = "20.0.24"  # 20.0.26 lacks its linux native package on the registry


# What no Python ``status`` can skip: start the interpreter, read the file, split it into lines
# and decode each with msgspec (into status's own struct, or into one field), and nothing else.
FLOOR = """
import gc, sys
gc.disable()
import msgspec
if sys.argv[2] == "rec":
    from contextfork.telemetry.ccstruct import _DECODER as d
else:
    class One(msgspec.Struct):
        type: str | None = None
    d = msgspec.json.Decoder(One)
decode = d.decode
with open(sys.argv[1], "rb") as fh:
    data = fh.read()
for line in data.split(b"\\n"):
    if line:
        decode(line)
"""


def timed(cmd: list[str], *, env: dict[str, str], cwd: Path, stdin: str | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[:400]}")
    return dt, cpu, proc.stdout


class Bench:
    """One command's runs: wall and CPU seconds, and its last output."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None,
                 before: object = None) -> None:
        self.cmd, self.env, self.cwd, self.stdin, self.before = cmd, env, cwd, stdin, before
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.out = ""

    def run(self) -> None:
        if callable(self.before):
            self.before()
        wall, cpu, self.out = timed(self.cmd, env=self.env, cwd=self.cwd, stdin=self.stdin)
        self.walls.append(wall)
        self.cpus.append(cpu)

    @property
    def ms(self) -> float:
        return statistics.median(self.walls) * 1000

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpus) * 1000


def ensure_ccusage(where: Path) -> tuple[Path, Path]:
    """(ccusage's bin, the native binary it launches), installed at the pinned version."""
    binary = where / "node_modules" / ".bin" / "ccusage"
    if not binary.exists():
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", f"ccusage@{CCUSAGE_VERSION}"], cwd=where, check=True)
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    native = where / "node_modules" / "@ccusage" / f"ccusage-{sys.platform}-{arch}" / "bin" / "ccusage"
    if not native.exists():
        raise SystemExit(f"ccusage's native binary not found: {native}")
    return binary, native


def main() -> int:  # noqa: C901 - one linear script
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transcript", type=Path, default=DEFAULT)
    ap.add_argument("--chain", type=int, default=0, help="benchmark the N-copy chained session instead")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline-tree", type=Path, default=None,
                    help="also time `status` from this checkout (PYTHONPATH), interleaved: A/B")
    ap.add_argument("--floor", action="store_true",
                    help="also time what no Python status can skip: read, split, msgspec decode")
    ap.add_argument("--ccusage-dir", type=Path, default=Path(tempfile.gettempdir()) / "contextfork-bench-ccusage")
    args = ap.parse_args()
    contextfork = str(Path(sys.executable).with_name("contextfork"))
    ccusage_bin, native_bin = ensure_ccusage(args.ccusage_dir)

    with tempfile.TemporaryDirectory(prefix="cf-bench-") as tmp_s:
        tmp = Path(tmp_s)
        if args.chain:
            sys.path.insert(0, str(HERE))
            from transcript_memory_bench import build

            src = tmp / "chained" / "big.jsonl"
            src.parent.mkdir()
            build(src, args.chain)
        else:
            src = args.transcript.resolve()
        if not src.is_file():
            raise SystemExit(f"transcript not found: {src}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env["XDG_CACHE_HOME"] = str(tmp / "cache")
        # a fresh repo for status's git part
        repo = tmp / "repo"
        repo.mkdir()
        git_env = {**env, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
                   "GIT_COMMITTER_EMAIL": "b@x"}
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "commit", "-q", "--allow-empty", "-m", "i"]):
            subprocess.run(cmd, cwd=repo, env=git_env, check=True)
        # the same file (and its subagents) in a CLAUDE_CONFIG_DIR for ccusage
        project = tmp / "claude" / "projects" / "-bench-project"
        project.mkdir(parents=True)
        shutil.copyfile(src, project / src.name)
        subs = src.with_suffix("") / "subagents"
        if subs.is_dir():
            (project / src.stem / "subagents").mkdir(parents=True)
            for f in subs.glob("*.jsonl"):
                shutil.copyfile(f, project / src.stem / "subagents" / f.name)
        cc_env = {**env, "CLAUDE_CONFIG_DIR": str(tmp / "claude")}
        payload = json.dumps({"transcript_path": str(src), "model": {"display_name": "Opus"},
                              "workspace": {"current_dir": str(repo), "project_dir": str(repo)}})

        def clear_cache() -> None:
            shutil.rmtree(tmp / "cache", ignore_errors=True)

        status_cmd = [contextfork, "status", "--json", "--transcript", str(src)]
        cc_args = ["session", "--json", "--offline"]
        warm_env = {**env, "XDG_CACHE_HOME": str(tmp / "cache-status-warm")}
        benches = {
            "status": Bench(status_cmd, env, repo, before=clear_cache),
            "status-warm": Bench(status_cmd, warm_env, repo),
            "line-cold": Bench([contextfork, "statusline"], env, repo, payload, before=clear_cache),
            "line-warm": Bench([contextfork, "statusline"], env, repo, payload),
            "npx": Bench(["npx", "--no-install", "ccusage", *cc_args], cc_env, args.ccusage_dir),
            "bin": Bench([str(ccusage_bin), *cc_args], cc_env, args.ccusage_dir),
            "native": Bench([str(native_bin), *cc_args], cc_env, args.ccusage_dir),
        }
        if args.floor:
            here_env = {**env, "PYTHONPATH": str(HERE.parent)}
            benches["floor-rec"] = Bench([sys.executable, "-c", FLOOR, str(src), "rec"], here_env, repo)
            benches["floor-one"] = Bench([sys.executable, "-c", FLOOR, str(src), "one"], here_env, repo)
        if args.baseline_tree:
            base_env = {**env, "PYTHONPATH": str(args.baseline_tree.resolve())}
            benches["status-base"] = Bench(status_cmd, base_env, repo, before=clear_cache)
        benches["status-warm"].run()  # its first look at the file notes it; the second caches
        for b in benches.values():  # warm the OS file cache and .pyc files
            b.run()
            b.walls.clear()
            b.cpus.clear()
        for _ in range(args.runs):
            for name, b in benches.items():
                if name == "line-warm":
                    clear_cache()
                    timed(b.cmd, env=b.env, cwd=b.cwd, stdin=b.stdin)  # prime it
                b.run()
        size = src.stat().st_size

    status, npx = benches["status"], benches["npx"]
    ours = json.loads(status.out)["data"]["billing"]
    theirs = json.loads(npx.out)["totals"]
    pairs = {
        "input": (ours["input_tokens"], theirs["inputTokens"]),
        "output": (ours["output_tokens"], theirs["outputTokens"]),
        "cache_creation": (ours["cache_creation_input_tokens"], theirs["cacheCreationTokens"]),
        "cache_read": (ours["cache_read_input_tokens"], theirs["cacheReadTokens"]),
    }
    print(f"transcript: {src.name} ({size / 1e6:.2f} MB), {args.runs} interleaved runs, "
          f"medians; load average before/after: {BEFORE_LOAD} / {os.getloadavg()[0]:.2f}")
    rows = [
        ("status", "contextfork status --json --transcript F"),
        ("status-warm", "  same, warm (F unchanged since it was cached)"),
        ("status-base", f"  same, from {args.baseline_tree}"),
        ("line-cold", "contextfork statusline (cold cache)"),
        ("line-warm", "contextfork statusline (warm cache)"),
        ("npx", f"npx ccusage@{CCUSAGE_VERSION} session --json"),
        ("bin", "ccusage session --json (its node launcher)"),
        ("native", "ccusage native binary, direct"),
        ("floor-rec", "floor: python, read, split, msgspec into Rec"),
        ("floor-one", "  same, into a one-field struct"),
    ]
    print(f"  {'':44s} {'wall ms':>8s} {'CPU ms':>8s}")
    for key, label in rows:
        if key in benches:
            print(f"  {label:44s} {benches[key].ms:8.1f} {benches[key].cpu_ms:8.1f}")
    for key in ("npx", "bin", "native"):
        print(f"  ratio status / {key:8s} wall {status.ms / benches[key].ms:5.2f}  "
              f"CPU {status.cpu_ms / benches[key].cpu_ms:5.2f}")
    print(f"  statusline: {benches['line-warm'].out.strip()}")
    same = all(a == b for a, b in pairs.values())
    for name, (a, b) in pairs.items():
        print(f"  billing {name:15s} contextfork {a:>12,}  ccusage {b:>12,}  {'==' if a == b else '!='}")
    print(f"billing totals {'EQUAL' if same else 'DIFFER'} to ccusage")
    warm = benches["line-warm"].ms
    ok = same and status.ms < npx.ms and warm < npx.ms
    if not args.chain:
        ok = ok and status.ms <= 400 and warm <= 150
    else:
        ok = ok and status.ms <= benches["bin"].ms
    print("targets met" if ok else "TARGETS NOT MET")
    return 0 if ok else 1


BEFORE_LOAD = f"{os.getloadavg()[0]:.2f}"

if __name__ == "__main__":
    sys.exit(main())
