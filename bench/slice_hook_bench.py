"""SubagentStart hook cost (prints figures; not a test).

    python bench/slice_hook_bench.py [--runs 10] [--data DIR]

Whole-process runs of ``contextfork hooks run subagent-start`` (cold: CONTEXTFORK_SERVER=off, an
interpreter start per hook, in a temporary git repository), median wall time and median CPU time
(user + system of the hook process: the figure that does not depend on what else the machine
runs), for: the 2.7 MB Claude Code dev session as the parent, ``/dev/zero`` as the parent
(hostile: nothing is injected), and for comparison ``user-prompt-submit`` with no store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def data_dir(given: str | None) -> Path:
    for cand in ([Path(given)] if given else []) + [ROOT.parent / "shared/data", ROOT.parent.parent / "shared/data"]:
        if (cand / "transcripts").is_dir():
            return cand
    sys.exit("no ../shared/data/transcripts here: pass --data DIR")


def measure(event: str, payload: dict[str, object], runs: int, cwd: Path) -> tuple[float, float, int]:
    env = {**os.environ, "CONTEXTFORK_SERVER": "off", "PYTHONPATH": str(ROOT)}
    wall, cpu, out = [], [], 0
    for _ in range(runs):
        before = os.times()
        t0 = os.times().elapsed
        proc = subprocess.run([sys.executable, "-m", "contextfork", "hooks", "run", event], cwd=cwd, env=env,
                              input=json.dumps(payload).encode(), capture_output=True, check=False)  # fmt: skip
        after = os.times()
        wall.append((after.elapsed - t0) * 1000)
        cpu.append((after.children_user + after.children_system - before.children_user - before.children_system) * 1000)
        out = len(proc.stdout)
    return statistics.median(wall), statistics.median(cpu), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--data")
    args = ap.parse_args()
    big = data_dir(args.data) / "transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        cases = [
            ("subagent-start", {"session_id": big.stem, "transcript_path": str(big), "agent_id": "a1",
                                "agent_type": "general-purpose", "cwd": str(repo)}, "the 2.7 MB dev session"),
            ("subagent-start", {"session_id": "x", "transcript_path": "/dev/zero", "agent_id": "a2",
                                "agent_type": "coder", "cwd": str(repo)}, "/dev/zero (hostile)"),
            ("user-prompt-submit", {"session_id": "x", "prompt": "hello", "cwd": str(repo)}, "no store (comparison)"),
        ]  # fmt: skip
        print(f"load average {os.getloadavg()[0]:.1f}; {args.runs} runs each; cold interpreter per hook")
        for event, payload, what in cases:
            wall, cpu, out = measure(event, payload, args.runs, repo)
            print(f"{event:<20} {what:<26} wall median {wall:6.0f} ms  cpu median {cpu:5.0f} ms  stdout {out} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
