"""Cold store benchmark (prints figures; not a test).

    python bench/cold_bench.py [--sizes 1000,10000,100000] [--runs 15]

(1) `contextfork fold session` on the 2.9 MB Claude Code session in ../shared/data (wall time,
nodes written, bytes stored, redactions). (2) For synthetic stores of each size: median
in-process scan, median whole-process `contextfork fold scan`, median time to fold one more
step through the normal path (api.fold_step, in-process, tokenizer warm) and through the CLI
(served by the warm command server (`server enable`; a private one here) and cold with CONTEXTFORK_SERVER=off),
plus the peak RSS of the CLI scan processes. Synthetic stores are built by a bulk path
(node files written without fsync, one index transaction); single folds use the normal path.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from served import private_server  # noqa: E402 - this script's own directory

from contextfork.atomic import dump_json_bytes, write_bytes  # noqa: E402
from contextfork.cold import api  # noqa: E402
from contextfork.cold import index as idx  # noqa: E402
from contextfork.cold.layout import DEFAULT_POLICY, layout_at, policy_sha256  # noqa: E402
from contextfork.cold.node import build_node, node_bytes  # noqa: E402

SESSION = ROOT.parent / "shared/data/transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
rng = random.Random(7)
VOCAB = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 10)))
                for _ in range(30000)})


COLD = {**os.environ, "CONTEXTFORK_SERVER": "off"}
SERVED: dict[str, str] = {}  # set in main: a private command server (contextfork/server)


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """A whole `contextfork` process: cold (a fresh interpreter) unless ``env`` is SERVED."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "contextfork", *args], cwd=cwd, capture_output=True,
                          text=True, check=False, env=env or COLD)
    return time.perf_counter() - t, proc


def bench_session() -> None:
    if not SESSION.is_file():
        print("(1) fold session: skipped, transcript not found")
        return
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)  # the CLI wants a real repo
        wall, proc = _cli("fold", "session", "--transcript", str(SESSION), "--session", "cc", "--json", cwd=repo)
        data = json.loads(proc.stdout)["data"]
        stored = sum(p.stat().st_size for p in (repo / ".contextfork/cold/cc").rglob("*") if p.is_file())
        print(f"(1) fold session {SESSION.name} ({SESSION.stat().st_size / 1e6:.2f} MB): "
              f"wall {wall:.2f} s (whole process), steps {data['steps']}, nodes written {data['written']}, "
              f"payload {data['payload_bytes']} B, store on disk {stored} B, redactions {data['redactions']}, "
              f"tokens {data['tokens']}")


def _synthetic(i: int) -> tuple[str, str, list[str]]:
    r = random.Random(i)
    words = r.sample(VOCAB, 40)
    summary = f"step {i}: " + " ".join(words[:8])
    content = " ".join(words) + f"\nfile mod_{i % 997}.py exit 0\n"
    intents = [f"file:mod_{i % 997}.py"] if i % 10 == 0 else []
    return summary, content, intents


def build_bulk(store: Path, n: int) -> float:
    t = time.perf_counter()
    layout = layout_at(store)
    write_bytes(layout.policy_file, dump_json_bytes(DEFAULT_POLICY))
    phash = policy_sha256(DEFAULT_POLICY)
    layout.nodes_dir.mkdir(parents=True, exist_ok=True)
    with idx.opened(layout) as conn, idx.transaction(conn):
        for i in range(1, n + 1):
            summary, content, intents = _synthetic(i)
            node = build_node(session_id=layout.session_id, step_id=i, summary=summary,
                              payload=content.encode(), policy_sha256=phash, intents=intents)
            layout.node_path(i).write_bytes(node_bytes(node))  # bench-only bulk path: no fsync
            idx.add_node(conn, node)
    return time.perf_counter() - t


def _prompts(k: int) -> list[str]:
    r = random.Random(99)
    return [" ".join(r.sample(VOCAB, 6)) + f" mod_{r.randint(0, 996)}.py" for _ in range(k)]


def bench_size(n: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)  # the CLI wants a real repo
        store = repo / ".contextfork" / "cold" / "bench"
        build = build_bulk(store, n)
        prompts = _prompts(runs)
        api.page_in(prompts[0], store_dir=store)  # warm the page cache
        ins = []
        for p in prompts:
            t = time.perf_counter()
            api.page_in(p, store_dir=store)
            ins.append(time.perf_counter() - t)
        cli, cli_served = [], []
        for p in prompts[: max(5, runs // 2)]:
            dt, proc = _cli("fold", "scan", p, "--session", "bench", "--json", cwd=repo)
            assert proc.returncode == 0, proc.stderr
            cli.append(dt)
            dt, proc = _cli("fold", "scan", p, "--session", "bench", "--json", cwd=repo, env=SERVED)
            assert proc.returncode == 0, proc.stderr
            cli_served.append(dt)
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        folds = []
        for j in range(5):
            s, c, it = _synthetic(n + 1 + j)
            t = time.perf_counter()
            api.fold_step(n + 1 + j, s, c, store_dir=store, intents=it)
            folds.append(time.perf_counter() - t)
        cli_folds, served_folds = [], []
        for _ in range(5):  # interleaved: one step folded cold, the next one served
            for env, out in ((COLD, cli_folds), (SERVED, served_folds)):
                step = n + 10 + len(cli_folds) + len(served_folds)
                dt, proc = _cli("fold", "add", str(step), "one more step", "--session", "bench",
                                "--file", str(ROOT / "README.md"), cwd=repo, env=env)
                assert proc.returncode == 0, proc.stderr
                out.append(dt)
        size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
        print(f"(2) {n:>6} nodes: scan in-process median {statistics.median(ins) * 1000:.1f} ms, "
              f"CLI scan median {statistics.median(cli_served) * 1000:.0f} ms served / "
              f"{statistics.median(cli) * 1000:.0f} ms cold (peak RSS so far {rss_mb:.0f} MB), "
              f"one fold median {statistics.median(folds) * 1000:.1f} ms in-process / "
              f"{statistics.median(served_folds) * 1000:.0f} ms CLI served / "
              f"{statistics.median(cli_folds) * 1000:.0f} ms CLI cold; "
              f"bulk build {build:.1f} s, store {size / 1e6:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--skip-session", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as srv, private_server(dict(os.environ), srv) as env:
        SERVED.update(env)
        if not args.skip_session:
            bench_session()
        for n in (int(x) for x in args.sizes.split(",")):
            bench_size(n, args.runs)


if __name__ == "__main__":
    main()
