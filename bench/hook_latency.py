"""Hook latency benchmark (issue 7; prints figures, not a test).

    python bench/hook_latency.py [--nodes 10000] [--runs 30] [--transcript F]

Whole-process wall time, as the harness pays it, of
  contextfork hooks run user-prompt-submit (Claude Code UserPromptSubmit JSON on stdin, against a
                                         cold store of N synthetic nodes; prompts that match)
  contextfork statusline                (Claude Code statusLine JSON on stdin; the dev-set
                                         session as transcript_path; cache warm after run 1)
plus `python -c pass` as the interpreter floor. Target: prompt hook median <= 200 ms.
The store is built by bench/cold_bench.py's bulk builder (node files + one index transaction).
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from cold_bench import _prompts, build_bulk  # noqa: E402

DEV = (
    HERE.parents[1]
    / "shared/data/transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)
SESSION = "bench-session"
TARGET_MS = 200


def command() -> list[str]:
    """The console script the harness would run, else ``python -m contextfork``."""
    script = Path(sys.executable).parent / "contextfork"
    return [str(script)] if script.exists() else [sys.executable, "-m", "contextfork"]


def timed(args: list[str], stdin: str, cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        args, input=stdin, capture_output=True, text=True, cwd=cwd, env=env, check=False
    )
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr[:400]}")
    return dt, proc.stdout


def summary(name: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"{name:<36} median {statistics.median(ms):6.1f} ms   p90 {p90:6.1f} ms   min {ms[0]:6.1f} ms   (n={len(ms)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--transcript", type=Path, default=DEV if DEV.exists() else None)
    args = ap.parse_args()
    cmd = command()
    with tempfile.TemporaryDirectory(prefix="cf-hook-bench-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        env = {
            **os.environ,
            "CLAUDE_CONFIG_DIR": str(Path(tmp) / "claude"),
            "XDG_CACHE_HOME": str(Path(tmp) / "cache"),
        }
        store = root / ".contextfork" / "cold" / SESSION
        built = build_bulk(store, args.nodes)
        transcript = Path(tmp) / "session.jsonl"
        if args.transcript is not None:
            shutil.copyfile(args.transcript, transcript)
        else:
            transcript.write_text("")
        print(f"store: {args.nodes} nodes built in {built:.1f} s; command: {' '.join(cmd)}")
        print(f"transcript: {args.transcript or '(none)'}")

        floor = [timed([sys.executable, "-c", "pass"], "", root, env)[0] for _ in range(args.runs)]

        prompts = _prompts(args.runs)
        hook_times, injected = [], 0
        for p in prompts:
            payload = json.dumps(
                {
                    "session_id": SESSION,
                    "transcript_path": str(transcript),
                    "cwd": str(root),
                    "permission_mode": "default",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": p,
                }
            )
            dt, out = timed([*cmd, "hooks", "run", "user-prompt-submit"], payload, root, env)
            hook_times.append(dt)
            if out:
                ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
                injected += ctx.count("<cold-step ")
        miss = json.dumps(
            {
                "session_id": SESSION,
                "transcript_path": str(transcript),
                "cwd": str(root),
                "hook_event_name": "UserPromptSubmit",
                "prompt": "hello there",
            }
        )
        miss_times = [
            timed([*cmd, "hooks", "run", "user-prompt-submit"], miss, root, env)[0]
            for _ in range(args.runs)
        ]

        status_in = json.dumps(
            {
                "session_id": SESSION,
                "transcript_path": str(transcript),
                "cwd": str(root),
                "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
                "workspace": {"current_dir": str(root), "project_dir": str(root)},
                "version": "2.1.38",
            }
        )
        cold, line = timed([*cmd, "statusline"], status_in, root, env)
        warm = [timed([*cmd, "statusline"], status_in, root, env)[0] for _ in range(args.runs)]

        print()
        print(summary("python -c pass (floor)", floor))
        print(
            summary(f"hooks run user-prompt-submit ({args.nodes} nodes)", hook_times)
            + f"   {injected} blocks injected over {args.runs} prompts"
        )
        print(summary("hooks run user-prompt-submit (no match)", miss_times))
        print(
            summary("statusline (warm cache)", warm) + f"   first (cold) run {cold * 1000:.0f} ms"
        )
        print(f"statusline output: {line.strip()}")
        med = statistics.median(hook_times) * 1000
        print(
            f"\ntarget: prompt hook median <= {TARGET_MS} ms -> {'MET' if med <= TARGET_MS else 'MISSED'} ({med:.1f} ms)"
        )


if __name__ == "__main__":
    main()
