"""Hook latency benchmark (issue 7; prints figures, not a test).

    python bench/hook_latency.py [--nodes 10000] [--runs 30] [--transcript F] [--served]

Whole-process wall time, as the harness pays it, of
  contextfork hooks run user-prompt-submit (Claude Code UserPromptSubmit JSON on stdin, against a
                                         cold store of N synthetic nodes; prompts that match)
  contextfork statusline                (Claude Code statusLine JSON on stdin; the dev-set
                                         session as transcript_path; cache warm after run 1)
  contextfork hook session-start        (a new session's startup with nothing to offer: first
                                         in a repo without packages, then with --packages
                                         packages that are all consumed or claimed by forks)
plus `python -c pass` as the interpreter floor. Cold (CONTEXTFORK_SERVER=off: a whole interpreter
start per hook) unless --served (through a private warm command server, contextfork/server). Targets (medians): prompt hook <= 200 ms,
statusline warm <= 150 ms, session-start with nothing to do <= 200 ms.
The store is built by bench/cold_bench.py's bulk builder (node files + one index transaction).
"""

from __future__ import annotations

import argparse
import contextlib
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
from served import private_server  # noqa: E402

DEV = (
    HERE.parents[1]
    / "shared/data/transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)
SESSION = "bench-session"
TARGET_MS = 200
STATUSLINE_TARGET_MS = 150
SESSION_START_TARGET_MS = 200


def command() -> list[str]:
    """The console script the harness would run, else ``python -m contextfork``."""
    script = Path(sys.executable).parent / "contextfork"
    return [str(script)] if script.exists() else [sys.executable, "-m", "contextfork"]


def precompile() -> None:
    """Byte-compile the package first, as ``pip install`` does for every user.

    With PYTHONDONTWRITEBYTECODE set (CI, some containers) an editable checkout has no
    ``__pycache__``, and every hook process would recompile each module it imports from source
    (~100 ms for the prompt hook) — a cost no installed copy pays.
    """
    import compileall

    import contextfork

    pkg = Path(contextfork.__file__).parent
    compileall.compile_dir(str(pkg), quiet=1)
    print(f"byte-compiled {pkg} (as pip install does)")


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
    ap.add_argument("--packages", type=int, default=20)
    ap.add_argument("--served", action="store_true",
                    help="through a warm command server (the default a user gets), not cold")  # fmt: skip
    args = ap.parse_args()
    cmd = command()
    precompile()
    with tempfile.TemporaryDirectory(prefix="cf-hook-bench-") as tmp, contextlib.ExitStack() as stack:
        root = Path(tmp) / "repo"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        env = {
            **os.environ,
            "CLAUDE_CONFIG_DIR": str(Path(tmp) / "claude"),
            "XDG_CACHE_HOME": str(Path(tmp) / "cache"),
            "CONTEXTFORK_SERVER": "off",
        }
        if args.served:
            env = stack.enter_context(private_server(env, Path(tmp) / "srv"))
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

        start_in = json.dumps(
            {
                "session_id": "bench-new-session",
                "transcript_path": str(Path(tmp) / "claude" / "new.jsonl"),
                "cwd": str(root),
                "hook_event_name": "SessionStart",
                "source": "startup",
            }
        )

        def session_start() -> list[float]:
            out = []
            for _ in range(args.runs):
                dt, printed = timed([*cmd, "hook", "session-start"], start_in, root, env)
                if printed:
                    raise SystemExit(f"session-start had something to do: {printed[:200]}")
                out.append(dt)
            return out

        start_empty = session_start()
        fill_packages(root, args.packages, cmd, env)
        start_full = session_start()

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
        print(summary("hook session-start (no packages)", start_empty))
        print(summary(f"hook session-start ({args.packages} pkgs, none due)", start_full))
        print()
        for name, times, target in (
            ("prompt hook", hook_times, TARGET_MS),
            ("statusline warm", warm, STATUSLINE_TARGET_MS),
            ("session-start, nothing to do", start_empty + start_full, SESSION_START_TARGET_MS),
        ):
            med = statistics.median(times) * 1000
            print(
                f"target: {name} median <= {target} ms -> "
                f"{'MET' if med <= target else 'MISSED'} ({med:.1f} ms)"
            )


def fill_packages(root: Path, n: int, cmd: list[str], env: dict[str, str]) -> None:
    """``n`` packages none of which is due to a new session: one real export copied, half of
    them consumed, the other half claimed by (fake) fork records of other sessions."""
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "bench"],
                   check=True, env={**env, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
                                    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"})
    res = subprocess.run([*cmd, "export", "--json"], cwd=root, env=env, capture_output=True,
                         text=True, check=True)
    first = Path(json.loads(res.stdout)["data"]["path"])
    forks = root / ".contextfork" / "harness" / "forks"
    forks.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        pkg = first if i == 0 else first.with_name(f"{first.name[:-6]}{i:06x}")
        if not pkg.exists():
            shutil.copytree(first, pkg)
        if i % 2:
            (forks / f"other-fork-{i}.json").write_text(
                json.dumps({"session_id": f"other-fork-{i}", "package_id": pkg.name})
            )
        else:
            pkg.with_name(pkg.name + ".state.json").write_text(
                json.dumps({"package_id": pkg.name, "consumptions": [
                    {"session_id": f"other-{i}", "at": "2026-01-01T00:00:00.000Z",
                     "user": None, "host": None, "applied": False, "drift": False}]})
            )


if __name__ == "__main__":
    main()
