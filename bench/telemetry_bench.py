"""Benchmark telemetry as whole processes against ccusage on the same Claude Code session.

    python bench/telemetry_bench.py [--transcript F] [--runs 15]

Prints the median wall time of
  contextfork status --json --transcript F        (cwd: a fresh one-commit git repo)
  contextfork statusline                          (cold: empty cache; warm: cache primed)
  npx ccusage session --json --offline            (ccusage@20.0.24, F in a temp CLAUDE_CONFIG_DIR)
with the ratios, and checks that our billing totals equal ccusage's.
Targets (issue 4): status <= 400 ms, warm statusline <= 150 ms, both faster than ccusage.
"""

from __future__ import annotations

import argparse
import json
import os
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


def timed(cmd: list[str], *, env: dict[str, str], cwd: Path, stdin: str | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[:400]}")
    return dt, proc.stdout


def median_ms(cmd: list[str], runs: int, *, env: dict[str, str], cwd: Path, stdin: str | None = None,
              before: object = None) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        if callable(before):
            before()
        dt, out = timed(cmd, env=env, cwd=cwd, stdin=stdin)
        times.append(dt)
    return statistics.median(times) * 1000, out


def ensure_ccusage(where: Path) -> Path:
    binary = where / "node_modules" / ".bin" / "ccusage"
    if not binary.exists():
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", f"ccusage@{CCUSAGE_VERSION}"], cwd=where, check=True)
    return binary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transcript", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--ccusage-dir", type=Path, default=Path(tempfile.gettempdir()) / "contextfork-bench-ccusage")
    args = ap.parse_args()
    src: Path = args.transcript.resolve()
    if not src.is_file():
        raise SystemExit(f"transcript not found: {src}")
    contextfork = str(Path(sys.executable).with_name("contextfork"))
    ccusage_bin = ensure_ccusage(args.ccusage_dir)

    with tempfile.TemporaryDirectory(prefix="cf-bench-") as tmp_s:
        tmp = Path(tmp_s)
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

        status_cmd = [contextfork, "status", "--json", "--transcript", str(src)]
        line_cmd = [contextfork, "statusline"]
        payload = json.dumps({"transcript_path": str(src), "model": {"display_name": "Opus"},
                              "workspace": {"current_dir": str(repo), "project_dir": str(repo)}})
        npx_cmd = ["npx", "--no-install", "ccusage", "session", "--json", "--offline"]
        direct_cmd = [str(ccusage_bin), "session", "--json", "--offline"]

        def clear_cache() -> None:
            shutil.rmtree(tmp / "cache", ignore_errors=True)

        timed(status_cmd, env=env, cwd=repo)  # warm the OS file cache and .pyc files
        status_ms, status_out = median_ms(status_cmd, args.runs, env=env, cwd=repo)
        cold_ms, _ = median_ms(line_cmd, args.runs, env=env, cwd=repo, stdin=payload, before=clear_cache)
        timed(line_cmd, env=env, cwd=repo, stdin=payload)
        warm_ms, line_out = median_ms(line_cmd, args.runs, env=env, cwd=repo, stdin=payload)
        npx_ms, npx_out = median_ms(npx_cmd, args.runs, env=cc_env, cwd=args.ccusage_dir)
        direct_ms, _ = median_ms(direct_cmd, args.runs, env=cc_env, cwd=args.ccusage_dir)

    ours = json.loads(status_out)["data"]["billing"]
    theirs = json.loads(npx_out)["totals"]
    pairs = {
        "input": (ours["input_tokens"], theirs["inputTokens"]),
        "output": (ours["output_tokens"], theirs["outputTokens"]),
        "cache_creation": (ours["cache_creation_input_tokens"], theirs["cacheCreationTokens"]),
        "cache_read": (ours["cache_read_input_tokens"], theirs["cacheReadTokens"]),
    }
    print(f"transcript: {src} ({src.stat().st_size / 1e6:.2f} MB), {args.runs} runs each, median wall time")
    print(f"  contextfork status --json --transcript F   {status_ms:7.1f} ms  (target <= 400)")
    print(f"  contextfork statusline (cold cache)        {cold_ms:7.1f} ms")
    print(f"  contextfork statusline (warm cache)        {warm_ms:7.1f} ms  (target <= 150)")
    print(f"  npx ccusage@{CCUSAGE_VERSION} session --json     {npx_ms:7.1f} ms")
    print(f"  ccusage native binary session --json       {direct_ms:7.1f} ms  (reference, no npx)")
    print(f"  ratio status / npx ccusage                 {status_ms / npx_ms:7.2f}")
    print(f"  ratio warm statusline / npx ccusage        {warm_ms / npx_ms:7.2f}")
    print(f"  ratio cold statusline / npx ccusage        {cold_ms / npx_ms:7.2f}")
    print(f"  statusline: {line_out.strip()}")
    same = all(a == b for a, b in pairs.values())
    for name, (a, b) in pairs.items():
        print(f"  billing {name:15s} contextfork {a:>12,}  ccusage {b:>12,}  {'==' if a == b else '!='}")
    print(f"billing totals {'EQUAL' if same else 'DIFFER'} to ccusage")
    ok = same and status_ms <= 400 and warm_ms <= 150 and status_ms < npx_ms and warm_ms < npx_ms
    print("targets met" if ok else "TARGETS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
