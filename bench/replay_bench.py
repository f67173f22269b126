"""Replay every dev-set session under every policy and print the bill against the targets.

    python bench/replay_bench.py [--transcripts DIR] [--json]

Targets (issue 6): refold and epoch each send <= 0.55 x base's total prompt tokens with a cached
share >= 0.85; carriage >= 0.95; render <= 1 ms per step; restore exact for 100 % of removals.
Restores are checked the way users get them: the originals of every step any policy removed
are written to a cold store in a temporary directory, and each removal is read back from it
(SHA-256 verified by the store, then against the removal's own sha256) and compared bytes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.cold.layout import layout_at
from contextfork.render.coldsource import ColdSource, persist_steps, render_session_id
from contextfork.render.policies import POLICY_NAMES, parse_policies
from contextfork.render.replay import carriage_tracker, replay_policy, verify_removals
from contextfork.render.tokcache import TokenCache
from contextfork.transcript import load_session


@dataclass
class Totals:
    prompt: int = 0
    cached: int = 0
    hit: int = 0
    want: int = 0
    cost: float = 0.0
    ms: list[float] = field(default_factory=list)
    removals: int = 0
    restored: int = 0
    rewrites: int = 0
    calls: int = 0
    peak: int = 0


DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transcripts", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    files = sorted(p for p in args.transcripts.glob("*/*") if p.is_file()
                   and p.suffix in (".jsonl", ".json"))
    if not files:
        print(f"no transcripts under {args.transcripts}", file=sys.stderr)
        return 2
    tokens = TokenCache()
    policies = parse_policies(",".join(POLICY_NAMES))
    totals: dict[str, Totals] = {p.name: Totals() for p in policies}
    rows: list[dict[str, Any]] = []
    cold_tmp = tempfile.TemporaryDirectory(prefix="contextfork-bench-cold-")
    cold_nodes = cold_bytes = 0
    cold_seconds = 0.0
    t_start = time.perf_counter()
    for path in files:
        session = load_session(path)
        tracker = carriage_tracker(session)
        base_total = None
        runs = [(pol, *replay_policy(session, pol, tokens, tracker)) for pol in policies]
        t_cold = time.perf_counter()
        layout = layout_at(Path(cold_tmp.name) / "cold" / render_session_id(session, path))
        removed = {rm.step for _p, _m, removals, _e, _c in runs for rm in removals}
        stored = persist_steps(layout, session, removed)
        source = ColdSource(layout)
        failures = {pol.name: verify_removals(session, removals, source)
                    for pol, _m, removals, _e, _c in runs}
        cold_seconds += time.perf_counter() - t_cold
        cold_nodes += stored.written
        cold_bytes += sum(len(source.step_text(s).encode()) for s in stored.steps)
        for pol, meter, removals, epochs, (hit, want) in runs:
            bad = failures[pol.name]
            tot = totals[pol.name]
            tot.prompt += meter.total
            tot.cached += meter.total_cached
            tot.hit += hit
            tot.want += want
            tot.ms += meter.render_ms
            tot.removals += len(removals)
            tot.restored += len(removals) - len(bad)
            tot.rewrites += meter.rewrites
            tot.calls += len(meter.prompts)
            tot.peak = max(tot.peak, meter.peak)
            fresh = meter.total - meter.total_cached
            tot.cost += (fresh * 3.0 + meter.total_cached * 0.3) / 1e6
            if pol.name == "base":
                base_total = meter.total
            rows.append({
                "session": f"{path.parent.name}/{path.name}", "steps": len(session.steps),
                "policy": pol.name, "prompt": meter.total,
                "ratio": round(meter.total / base_total, 3) if base_total else None,
                "cached_share": round(meter.total_cached / meter.total, 3) if meter.total else 0,
                "peak": meter.peak, "rewrites": meter.rewrites, "epochs": epochs,
                "carriage": round(hit / want, 3) if want else None,
                "render_ms_median": round(meter.median_render_ms, 4),
                "removals": len(removals), "restore_failures": len(bad),
            })
    elapsed = time.perf_counter() - t_start
    cold_tmp.cleanup()
    base = totals["base"].prompt
    summary: dict[str, dict[str, Any]] = {}
    for name, tot in totals.items():
        summary[name] = {
            "prompt_tokens": tot.prompt, "ratio_to_base": round(tot.prompt / base, 3),
            "cached_share": round(tot.cached / tot.prompt, 3),
            "carriage": round(tot.hit / tot.want, 3) if tot.want else None,
            "cost_usd": round(tot.cost, 2), "render_ms_median": round(
                statistics.median(tot.ms), 4) if tot.ms else 0.0,
            "render_ms_max": round(max(tot.ms), 3) if tot.ms else 0.0,
            "rewrites": tot.rewrites, "calls": tot.calls, "peak": tot.peak,
            "removals": tot.removals, "restored_exact": tot.restored,
        }
    if args.json:
        print(json.dumps({"sessions": rows, "totals": summary, "seconds": round(elapsed, 2),
                          "cold_store": {"nodes": cold_nodes, "bytes": cold_bytes,
                                         "seconds": round(cold_seconds, 2)}},
                         indent=2))
        return 0
    hdr = (f"{'session':44} {'steps':>5} {'policy':8} {'prompt tok':>11} {'xbase':>6} "
           f"{'cached':>6} {'peak':>7} {'rewr':>4} {'ep':>3} {'carry':>5} {'ms/step':>7} "
           f"{'removed':>7}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['session'][:44]:44} {r['steps']:>5} {r['policy']:8} {r['prompt']:>11,} "
              f"{r['ratio'] if r['ratio'] is not None else '':>6} {r['cached_share']:>6} "
              f"{r['peak']:>7,} {r['rewrites']:>4} {r['epochs']:>3} "
              f"{r['carriage'] if r['carriage'] is not None else '':>5} "
              f"{r['render_ms_median']:>7} {r['removals']:>7}")
    print()
    print(f"TOTALS over {len(files)} sessions ({elapsed:.1f} s; cost at $3/Mtok input, "
          f"$0.30/Mtok cache read = 0.1 x input)")
    print(f"{'policy':8} {'prompt tok':>12} {'xbase':>6} {'cached':>6} {'carriage':>8} "
          f"{'cost $':>8} {'ms/step med':>11} {'ms max':>7} {'rewrites':>8} {'restored':>15}")
    for name, s in summary.items():
        print(f"{name:8} {s['prompt_tokens']:>12,} {s['ratio_to_base']:>6} "
              f"{s['cached_share']:>6} {s['carriage'] if s['carriage'] is not None else '':>8} "
              f"{s['cost_usd']:>8} {s['render_ms_median']:>11} {s['render_ms_max']:>7} "
              f"{s['rewrites']:>8} {s['restored_exact']:>7}/{s['removals']:<7}")
    print(f"restores read back from a cold store: {cold_nodes} step originals "
          f"({cold_bytes:,} bytes) written, every removal re-read and compared in "
          f"{cold_seconds:.1f} s")
    print()
    ok = True
    for name in ("refold", "epoch"):
        s = summary[name]
        checks = {
            "tokens <= 0.55 x base": s["ratio_to_base"] <= 0.55,
            "cached share >= 0.85": s["cached_share"] >= 0.85,
            "carriage >= 0.95": (s["carriage"] or 0) >= 0.95,
            "render <= 1 ms/step (median)": s["render_ms_median"] <= 1.0,
            "restore exact 100 %": s["restored_exact"] == s["removals"],
        }
        for label, passed in checks.items():
            ok &= passed
            print(f"  {name:7} {label:30} {'MET' if passed else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
