"""How long `contextfork view` takes on the 2.76 MB development Claude Code session.

Folds the session into a fresh repository's cold store first (so the page shows every cold
node, re-verified), then times whole `contextfork view` processes (median of 5), without and
with the replay page. Target: ≤ 2 s for a 3 MB session.

    python bench/view_bench.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = (ROOT.parent / "shared" / "data" / "transcripts" / "claude-code"
           / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")  # fmt: skip


def run(*args: str, cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "contextfork", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


def main() -> int:
    if not SESSION.is_file():
        print(f"{SESSION} is absent (../shared)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cf-view-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q",
                        "--allow-empty", "-m", "i"], cwd=repo, check=True)  # fmt: skip
        run("fold", "session", "--transcript", str(SESSION), "--session", SESSION.stem, cwd=repo)
        size = SESSION.stat().st_size / 1e6
        for label, extra in (("view", []), ("view --replay", ["--replay"])):
            times = [run("view", "--transcript", str(SESSION), *extra, cwd=repo) for _ in range(5)]
            print(f"{label:<15} {size:.2f} MB session: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s (whole process, 5 runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
