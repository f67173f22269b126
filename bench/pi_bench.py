"""pi live folding, measured: window band, rewrites, cached share, tokens vs native, latency.

    python bench/pi_bench.py [--transcript P] [--turns N] [--pi-turns N] [--no-pi] [--json]

1. The development pi session (``../shared/data/transcripts/pi/large-session.jsonl``), every
   model call replayed through the live path (``contextfork.harness.pi.live``: the worker's
   renderer, fed pi's messages call by call), against the same calls under pi's native replay
   (``native``: what pi sent, its own compactions only; this session has none) and pi's
   threshold compaction replayed (``compact`` at 200k - 16,384 tokens, pi's default). Per
   policy: min/max prompt tokens per request (the band), rewrites (calls whose prefix changed),
   cached share (tokens of the longest common prefix with the previous call / all tokens) and
   total prompt tokens, counted by ``contextfork.render.metrics.Meter`` (real token counts).
2. The same calls through a real ``contextfork pi-worker`` process (JSON lines, deltas, as the
   extension sends them): the worker's round trip per request, warm (median, p95, max).
3. A long scripted mock session (``tests/harness/pi_session.py``) through the live path, and
   (unless ``--no-pi``) the real pi (npm, pinned) with the extension against the Anthropic mock:
   the extension's added latency per request as pi measures it (``CONTEXTFORK_PI_TIMING``:
   from the context event to the returned messages), median with the worker warm (target
   <= 20 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contextfork.harness.pi.live import LiveSession, live_policy  # noqa: E402
from contextfork.harness.pi.messages import fingerprint  # noqa: E402
from contextfork.render.api import make_renderer  # noqa: E402
from contextfork.render.metrics import Meter  # noqa: E402
from contextfork.render.policies import policy  # noqa: E402
from contextfork.render.tokcache import TokenCache  # noqa: E402
from contextfork.transcript.model import Session  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "transcripts" / "pi" / "large-session.jsonl"
WINDOW = 200_000
PI_RESERVE = 16_384


def pi_session_messages(path: Path) -> list[dict[str, Any]]:
    from contextfork.transcript._jsonl import read_records
    from contextfork.transcript.pi import live_entries

    recs = live_entries(read_records(path).records)
    return [r.obj["message"] for r in recs
            if r.obj.get("type") == "message" and isinstance(r.obj.get("message"), dict)]


def call_contexts(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [messages[:i] for i, m in enumerate(messages) if m.get("role") == "assistant"]


def summary(meter: Meter, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    total = meter.total
    return {"calls": len(meter.prompts), "min_tokens": min(meter.prompts, default=0),
            "max_tokens": meter.peak, "total_tokens": total, "rewrites": meter.rewrites,
            "cached_share": round(meter.total_cached / total, 3) if total else 0.0,
            **(extra or {})}


def live_replay(messages: list[dict[str, Any]], root: Path, tokens: TokenCache,
                budget: int | None = None) -> tuple[dict[str, Any], Session]:
    sess = LiveSession("bench", live_policy("epoch", WINDOW, budget, 3, True), root)
    meter = Meter(tokens)
    sent = 0
    ms: list[float] = []
    for ctx in call_contexts(messages):
        started = time.perf_counter()
        sess.sync(sent, fingerprint(ctx[sent - 1]) if sent else None, ctx[sent:])
        sent = len(ctx)
        out = sess.render()
        ms.append((time.perf_counter() - started) * 1000)
        assert "why" not in out, out["why"]
        view = sess.last_view
        assert view is not None
        meter.observe(view.messages, view.boundary, ms[-1])
    view = sess.last_view
    sess.sync(sent, fingerprint(messages[sent - 1]) if sent else None, messages[sent:])
    session = Session(format="pi", session_id="bench", steps=list(sess.live.steps))  # all calls
    return summary(meter, {"epochs": view.epochs if view else 0,
                           "folds": len(view.folds) if view else 0,
                           "render_ms_median": round(statistics.median(ms), 2)}), session


def baseline(session: Session, name: str, tokens: TokenCache) -> dict[str, Any]:
    pol = policy(name)
    if name == "compact":
        pol = pol.with_(compact_threshold=WINDOW - PI_RESERVE)
    r = make_renderer(session, pol)
    meter = Meter(tokens)
    for s in sorted(st.index for st in session.steps):
        view = r.advance(s)
        meter.observe(view.messages, view.boundary, 0.0)
    return summary(meter)


def worker_latency(messages: list[dict[str, Any]], root: Path, think_ms: float
                   ) -> dict[str, Any]:
    """Round trips to a real worker process, as the extension makes them (deltas), with
    ``think_ms`` between calls for the model's answer."""
    proc = subprocess.Popen([sys.executable, "-m", "contextfork", "pi-worker"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"id": 0, "op": "ping"}) + "\n")
    proc.stdin.flush()
    proc.stdout.readline()  # warm: imports done
    ms: list[float] = []
    sent = 0
    try:
        for i, ctx in enumerate(call_contexts(messages), start=1):
            req = {"id": i, "op": "render", "session": "bench-worker", "cwd": str(root),
                   "context_window": WINDOW, "base": sent,
                   "prev_fp": fingerprint(ctx[sent - 1]) if sent else None,
                   "messages": ctx[sent:]}
            started = time.perf_counter()
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            ms.append((time.perf_counter() - started) * 1000)
            assert answer.get("ok"), answer
            sent = len(ctx)
            time.sleep(think_ms / 1000)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    ms.sort()
    return {"requests": len(ms), "median_ms": round(statistics.median(ms), 2),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2), "max_ms": round(ms[-1], 2)}


def real_pi(turns: int, tmp: Path) -> dict[str, Any]:
    """The real pi with the extension against the mock: the extension's ms per request."""
    from tests.e2e.clients import install_clients, node_missing
    from tests.e2e.mock_anthropic import MockAnthropic, Reply, ToolUse
    from tests.e2e.pi_rig import PiRig

    if node_missing():
        return {"skipped": node_missing()}
    prefix = install_clients()
    with MockAnthropic() as mock:
        rig = PiRig.create(tmp, prefix, mock)
        for n in range(1, turns + 1):
            rig.repo.write(f"data/part_{n}.txt", "".join(
                f"part {n} line {i}: value_{n}_{i} = compute_{n}({i})\n" for i in range(60)))
        rig.contextfork("hooks", "install", "--pi")
        mock.script(*[Reply(text=f"Reading {n}.", tool_uses=[
            ToolUse("bash", {"command": f"cat data/part_{n}.txt"})]) for n in range(1, turns + 1)],
            Reply(text="Done."))
        run = rig.run("Read every part.", timeout=600, env={"CONTEXTFORK_PI_TIMING": "1"})
        assert run.returncode == 0, run
        renders = [e for e in rig.log() if e.get("action") == "render"]
        passes = [e for e in rig.log() if e.get("action") == "pass-through"]
    ms = sorted(float(e["ms"]) for e in renders)
    warm = sorted(float(e["ms"]) for e in renders[1:])  # the first waits for the worker start
    return {"requests": len(ms), "pass_through": len(passes),
            "median_ms": round(statistics.median(warm), 2) if warm else None,
            "p95_ms": round(warm[int(0.95 * (len(warm) - 1))], 2) if warm else None,
            "max_ms": round(ms[-1], 2) if ms else None,
            "max_tokens_est": max((e.get("est_tokens", 0) for e in renders), default=0)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transcript", type=Path, default=DATA)
    ap.add_argument("--turns", type=int, default=400, help="scripted session length (calls)")
    ap.add_argument("--pi-turns", type=int, default=60, help="real pi run length (calls)")
    ap.add_argument("--no-pi", action="store_true", help="skip the real pi run")
    ap.add_argument("--think-ms", type=float, default=0,
                    help="model time between calls in the worker round-trip run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from tests.harness.pi_session import pi_messages
    from tests.helpers import make_repo

    tokens = TokenCache()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="contextfork-pi-bench-") as tmp:
        root = make_repo(Path(tmp) / "repo").path
        for label, msgs in (("dev_session", pi_session_messages(args.transcript)),
                            ("scripted", pi_messages(args.turns, lines=60))):
            live, session = live_replay(msgs, root, tokens)
            out[label] = {"live": live, "native": baseline(session, "native", tokens),
                          "pi_compaction": baseline(session, "compact", tokens)}
        out["dev_session"]["worker_round_trip"] = worker_latency(
            pi_session_messages(args.transcript), root, args.think_ms)
        if not args.no_pi:
            out["real_pi"] = real_pi(args.pi_turns, Path(tmp) / "pi")
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    for label in ("dev_session", "scripted"):
        print(f"== {label}")
        for pol in ("live", "native", "pi_compaction"):
            r = out[label][pol]
            print(f"  {pol:14} calls {r['calls']:4}  band {r['min_tokens']:>7,}-{r['max_tokens']:>8,}"
                  f"  rewrites {r['rewrites']:4}  cached {r['cached_share']:.3f}"
                  f"  total {r['total_tokens']:>12,}"
                  + (f"  ({r['total_tokens'] / out[label]['native']['total_tokens']:.2f} x native)"
                     if pol != "native" else ""))
        print(f"  live: epochs {out[label]['live']['epochs']}, folds {out[label]['live']['folds']},"
              f" render median {out[label]['live']['render_ms_median']} ms")
    w = out["dev_session"]["worker_round_trip"]
    print(f"== worker round trip (dev session, warm process, {args.think_ms:g} ms model time "
          f"between calls): median {w['median_ms']} ms, "
          f"p95 {w['p95_ms']} ms, max {w['max_ms']} ms over {w['requests']} requests")
    if "real_pi" in out:
        p = out["real_pi"]
        print(f"== real pi + extension ({p.get('requests')} requests): added latency median "
              f"{p.get('median_ms')} ms (warm), p95 {p.get('p95_ms')} ms, max {p.get('max_ms')} ms,"
              f" pass-through {p.get('pass_through')}  {p.get('skipped', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
