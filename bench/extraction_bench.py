"""Long ordinary runs through the fold path and the pi worker, timed (issue 22, item 4).

    python bench/extraction_bench.py [--src DIR] [--timeout S] [--sizes 20k,40k,1m]
                                     [--worker-sizes 100k,200k,30m] [--shapes ...]

``--src`` is the contextfork tree to run (default: this checkout); point it at an export of
another commit to compare (``git archive d5eb7ad | tar -x -C /tmp/old``). Every run is a real
subprocess with a timeout, so a quadratic shape is reported as ">TIMEOUT", not waited for.

1. ``contextfork fold add`` of one payload of each shape and size, as a user runs it (``--file``
   into a fresh git repository): wall time of the whole command.
2. ``contextfork pi-worker``: a warm worker gets one ``render`` request whose history holds one
   tool output of each size: time until its answer line (pass-through is an answer).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def shape(name: str, size: int) -> str:
    """The payload shapes of the report and the fuzz (each exactly ``size`` characters)."""
    unit = {
        "pytest-dots": "",  # one pytest progress line: a file name, then dots
        "hex": "0123456789abcdef",
        "dots": ".",
        "words": "abc ",
        "hyphens": "-",
        "slashes": "/",
        "backslashes": "\\",
        "spaces": " ",
        "prompts": "$ make test\n> ok\n",
        "mixed": "src/a-b/c.py:12: E999 ValueError at 0x7f3a $ ls ./x\\y\n",
    }[name]
    if name == "pytest-dots":
        head = "tests/test_extraction.py "
        return head + "." * (size - len(head))
    return (unit * (size // len(unit) + 1))[:size]


FOLD_ENV = {"CONTEXTFORK_PI_ADAPTIVE": "0", "CONTEXTFORK_PI_BUDGET": "1000"}


def env_for(src: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "CONTEXTFORK_"))}
    env["PYTHONPATH"] = str(src)
    env["CONTEXTFORK_SERVER"] = "off"
    env.update(extra or {})
    return env


def git_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q",
                                  "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def fold_add(src: Path, text: str, timeout: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        repo = git_repo(Path(tmp))
        payload = Path(tmp) / "payload.txt"
        payload.write_text(text, encoding="utf-8")
        cmd = [sys.executable, "-m", "contextfork", "fold", "add", "1", "bench step",
               "--file", str(payload)]
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=repo, env=env_for(src), capture_output=True,
                                  text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return f">{timeout:.0f} s (killed)"
        took = time.perf_counter() - started
        return f"{took:.2f} s" + ("" if proc.returncode == 0 else f" (exit {proc.returncode})")


def _messages(tool_text: str, turns: int = 6) -> list[dict[str, Any]]:
    ts = 1_700_000_000_000
    out: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}],
                                  "timestamp": ts}]
    for n in range(1, turns + 1):
        cid = f"toolu_{n:04d}"
        out.append({"role": "assistant", "content": [
            {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": "make"}}],
            "timestamp": ts + 2 * n})
        out.append({"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                    "content": [{"type": "text", "text": tool_text if n == 1 else "ok\n"}],
                    "isError": False, "timestamp": ts + 2 * n + 1})
    return out


def worker_render(src: Path, text: str, timeout: float) -> str:
    """Time to the answer of one render, the history's first tool output being ``text``; the
    budget is small and the warm-up gates off (``FOLD_ENV``), so the output is folded away and
    its original stored (the worker's heaviest path)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = git_repo(Path(tmp))
        proc = subprocess.Popen([sys.executable, "-m", "contextfork", "pi-worker"], cwd=repo,
                                env=env_for(src, FOLD_ENV), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"id": 0, "op": "ping"}) + "\n")
            proc.stdin.flush()
            proc.stdout.readline()  # warm: imports paid
            req = {"id": 1, "op": "render", "session": "bench", "cwd": str(repo), "base": 0,
                   "messages": _messages(text), "context_window": 8000}
            started = time.perf_counter()
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            import selectors

            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                return f">{timeout:.0f} s (no answer)"
            line = proc.stdout.readline()
            took = time.perf_counter() - started
            answer = json.loads(line)
            what = ("plan" if answer.get("plan") is not None else
                    f"pass-through ({answer.get('why') or answer.get('error') or 'identity'})")
            # then: is it still serving? (a ping is answered at once, busy or not)
            started = time.perf_counter()
            proc.stdin.write(json.dumps({"id": 2, "op": "ping"}) + "\n")
            proc.stdin.flush()
            if not sel.select(timeout):
                return f"{took:.2f} s, {what}; then no answer to a ping"
            proc.stdout.readline()
            ping = time.perf_counter() - started
            return f"{took:.2f} s, {what}; a ping then {ping * 1000:.0f} ms"
        finally:
            proc.kill()
            proc.wait()


def size_of(text: str) -> int:
    text = text.lower()
    mult = {"k": 1000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * mult)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--sizes", default="20k,40k,1m")
    ap.add_argument("--worker-sizes", default="100k,200k,30m")
    ap.add_argument("--shapes", default="pytest-dots,hex,dots,words,hyphens,slashes,backslashes,"
                                        "spaces,prompts,mixed")
    ap.add_argument("--worker-shape", default="pytest-dots")
    args = ap.parse_args()
    src = args.src.resolve()
    print(f"source: {src}\n\n## contextfork fold add --file <payload> (timeout {args.timeout:.0f} s)")
    for name in args.shapes.split(","):
        for size in args.sizes.split(","):
            if not size:
                continue
            print(f"{name:12} {size:>5}: {fold_add(src, shape(name, size_of(size)), args.timeout)}",
                  flush=True)
    print(f"\n## contextfork pi-worker, one render with a {args.worker_shape} tool output")
    for size in args.worker_sizes.split(","):
        if not size:
            continue
        text = shape(args.worker_shape, size_of(size))
        print(f"{size:>5}: {worker_render(src, text, args.timeout)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
