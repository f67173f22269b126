"""Peak memory and wall time of the whole-session commands on a large transcript (prints figures).

    python bench/transcript_memory_bench.py [--copies 20] [--only status,view,...] [--tree DIR]
    python bench/transcript_memory_bench.py --codex    (a generated 55 MB Codex rollout)

Builds one long Claude Code session by chaining ``--copies`` copies of the recorded
``258c7280…`` transcript (../shared/data/transcripts/claude-code), each with fresh uuids,
message, request and tool ids and its first root linked to the previous copy's last line, so
the whole file is one live conversation. Then runs ``status``, ``view``, ``fold session`` and
``fork`` on it as real subprocesses under ``/usr/bin/time -v`` and prints each one's peak RSS,
RSS per transcript byte and wall time. Target (issue 27 item 5): at most 2 bytes of RSS per
transcript byte.

The tokenizer's vocabulary cache (``contextfork.tokens``) is built once before the commands run,
as it is on any machine after its first count: building it costs ~30 MB more, once
(``--cold-cache`` measures each command with it absent).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (ROOT.parent / "shared" / "data" / "transcripts" / "claude-code"
          / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")  # fmt: skip
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(r"\b((?:msg|toolu|req|srvtoolu)_[A-Za-z0-9]+)")


def build(out: Path, copies: int) -> int:
    """Write the chained transcript; returns its size in bytes."""
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    session = SOURCE.stem
    last: str | None = None
    with open(out, "w", encoding="utf-8") as fh:
        for k in range(copies):
            mapping: dict[str, str] = {session: session}

            def fresh(m: re.Match[str], k: int = k, mapping: dict[str, str] = mapping) -> str:
                old = m.group(0)
                if old not in mapping:
                    mapping[old] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{k}:{old}"))
                return mapping[old]

            linked = k == 0
            for line in lines:
                text = _IDS.sub(lambda m, k=k: f"{m.group(1)}c{k}", _UUID.sub(fresh, line))
                if not linked:
                    obj = json.loads(text)
                    if "parentUuid" in obj and obj["parentUuid"] is None and obj.get("type") != "file-history-snapshot":
                        obj["parentUuid"] = last
                        linked = True
                        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
                uid = re.search(r'"uuid":"([0-9a-f-]{36})"', text)
                if uid and '"type":"file-history-snapshot"' not in text[:40]:
                    last = uid.group(1)
                fh.write(text + "\n")
    return out.stat().st_size


def build_codex(out: Path, target: int = 55_000_000) -> int:
    """A Codex rollout of ``target`` bytes written as Codex writes one: per turn a user message,
    an ``exec_command`` call, its ~17 KB output (230 lines of varied words), the answer and a
    ``token_count`` event (seeded: the same file on every run). Returns its size."""
    import random

    rnd = random.Random(3)
    words = ["billing", "gateway", "timeout", "retry", "module", "config", "server", "client",
             "request", "response", "error", "warning", "info", "debug", "cache", "token",
             "session", "fold", "store", "index", "node", "step"]  # fmt: skip
    with open(out, "w", encoding="utf-8") as fh:
        def w(t: int, kind: str, payload: Mapping[str, object]) -> None:
            fh.write(json.dumps({"timestamp": f"2026-12-01T12:{t // 60 % 60:02d}:{t % 60:02d}.000Z",
                                 "type": kind, "payload": payload}, separators=(",", ":")) + "\n")  # fmt: skip

        w(0, "session_meta", {"id": "cxbig", "cwd": str(out.parent)})
        t = i = 0
        while fh.tell() < target:
            i += 1
            ctx = min(20_000 + 60 * i, 250_000)
            body = "\n".join(f"{i}:{j}: " + " ".join(rnd.choice(words) for _ in range(8))
                             + f" code={rnd.randint(0, 99999)}" for j in range(230))  # fmt: skip
            for kind, payload in (
                ("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": f"look at part {i}"}]}),
                ("response_item", {"type": "function_call", "name": "exec_command", "call_id": f"c{i}",
                                   "arguments": json.dumps({"cmd": f"cat logs/part{i}.log"})}),
                ("response_item", {"type": "function_call_output", "call_id": f"c{i}", "output": body}),
                ("response_item", {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": f"part {i} read; {rnd.randint(0, 999)} warnings"}]}),
                ("event_msg", {"type": "token_count", "model_context_window": 272_000, "info": {
                    "total_token_usage": {"input_tokens": ctx * i, "cached_input_tokens": ctx * i // 2,
                                          "output_tokens": 40 * i},
                    "last_token_usage": {"input_tokens": ctx, "cached_input_tokens": ctx - 3000,
                                         "output_tokens": 40}}}),
            ):  # fmt: skip
                t += 1
                w(t, kind, payload)
    return out.stat().st_size


def peak(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float, int, str]:
    """(peak RSS in MB, wall s, CPU s, exit code, stderr tail) of one command under time -v."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=cwd, capture_output=True, text=True,
                          check=False, env=env)  # fmt: skip
    wall = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    tail = proc.stderr.split("\tCommand being timed")[0].strip()[-300:]
    return rss, wall, cpu, proc.returncode, tail


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--only", default="status,view,fold session,fork")
    ap.add_argument("--keep", type=Path, default=None, help="build the transcript here / reuse it")
    ap.add_argument("--cold-cache", action="store_true", help="no tokenizer cache before each command")
    ap.add_argument("--tree", type=Path, default=ROOT, help="run the commands from this checkout (A/B)")
    ap.add_argument("--codex", action="store_true", help="a generated 55 MB Codex rollout instead")
    args = ap.parse_args()
    if not SOURCE.is_file():
        print(f"skipped: {SOURCE} is absent")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="cf-tmem-"))
    if args.codex:  # named as Codex names its rollouts: ``fork`` writes a Codex fork of it
        transcript = args.keep or tmp / "rollout-2026-12-01T12-00-00-cxbig.jsonl"
        size = transcript.stat().st_size if transcript.is_file() else build_codex(transcript)
    else:
        transcript = args.keep or tmp / f"{SOURCE.stem}.jsonl"
        size = transcript.stat().st_size if transcript.is_file() else build(transcript, args.copies)
    what = "a generated Codex rollout" if args.codex else f"{args.copies} chained copies"
    print(f"transcript: {transcript} ({size / 1e6:.1f} MB, {what}); "
          f"tree {args.tree}; load average {os.getloadavg()[0]:.1f}", flush=True)
    repo = tmp / "repo"
    repo.mkdir()
    for cmd in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@x", *cmd], cwd=repo, check=True)
    env = {**os.environ, "HOME": str(tmp / "home"), "PYTHONPATH": str(args.tree.resolve()),
           "CODEX_HOME": str(tmp / "codex-home"), "CLAUDE_CONFIG_DIR": str(tmp / "claude")}
    base = [sys.executable, "-m", "contextfork"]
    warm = [sys.executable, "-c", "from contextfork.tokens import count_tokens; count_tokens('x')"]
    for name in args.only.split(","):
        if args.cold_cache:
            shutil.rmtree(tmp / "home", ignore_errors=True)
        else:
            subprocess.run(warm, cwd=repo, env=env, check=True)
        extra = ["--session", "big"] if name == "fold session" else []
        cmd = [*base, *name.split(), "--transcript", str(transcript), *extra]
        rss, wall, cpu, code, tail = peak(cmd, repo, env)
        print(f"`contextfork {name}`: peak RSS {rss:.0f} MB = {rss * 2**20 / size:.2f} B/byte, "
              f"wall {wall:.2f} s, CPU {cpu:.2f} s, exit {code}", flush=True)
        if code not in (0, 1):
            print("   ", tail.replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
