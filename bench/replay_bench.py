"""Replay every dev-set session under every policy and print the bill against the targets.

    python bench/replay_bench.py [--transcripts DIR] [--probes FILE] [--ttl 300|3600] [--json]

Baseline is ``native``: what the harness really sent (its own compactions, its recorded per-call
input usage); every policy is priced in the harness's tokens through a per-session fit of the
recorded usage (harness overhead + tokenizer scale, see contextfork/render/bill.py), with the
same cache model (TTL from the recorded timestamps, cache writes priced) and the list price of
the session's own model. ``base`` is the no-compaction reference.

Targets (issue 12): on every session with >= 30 steps refold and epoch cost <= 0.8 x native and
never more than native on any session; totals <= 0.6 x base; content carriage (renderer-added
name and signature lists stripped) >= 0.95 for refold and epoch and below it for mask and
compact where they act; render <= 1 ms per step; every removal restored exactly from a cold
store (written to a temporary directory, read back, SHA-256 verified, bytes compared).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from contextfork.cold.layout import layout_at
from contextfork.render.coldsource import ColdSource, persist_steps, render_session_id
from contextfork.render.policies import POLICY_NAMES, parse_policies
from contextfork.render.probes import probes_by_step
from contextfork.render.replay import replay_runs, verify_removals
from contextfork.render.tokcache import TokenCache
from contextfork.render.window import session_window
from contextfork.transcript import load_session

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LONG = 30  # sessions with at least this many steps carry the per-session targets
POLICIES: list[str] = list(POLICY_NAMES)


def run(files: list[Path], probes_file: Path, ttl: int | None) -> dict[str, Any]:
    tokens = TokenCache()
    policies = parse_policies(",".join(POLICIES))
    rows: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    cold_tmp = tempfile.TemporaryDirectory(prefix="contextfork-bench-cold-")
    cold = {"nodes": 0, "bytes": 0, "seconds": 0.0}
    ms: dict[str, list[float]] = {p: [] for p in POLICIES}
    t_start = time.perf_counter()
    for path in files:
        session = load_session(path)
        probes = probes_by_step(session, path, probes_file)
        runs, sb, reports = replay_runs(session, policies, tokens=tokens, ttl=ttl, probes=probes)
        t_cold = time.perf_counter()
        layout = layout_at(Path(cold_tmp.name) / "cold" / render_session_id(session, path))
        removed = {rm.step for r in runs for rm in r.removals}
        stored = persist_steps(layout, session, removed)
        source = ColdSource(layout)
        failures: dict[str, list[str]] = {
            r.policy.name: verify_removals(session, r.removals, source) for r in runs}
        cold["seconds"] += time.perf_counter() - t_cold
        cold["nodes"] += stored.written
        cold["bytes"] += sum(len(source.step_text(s).encode()) for s in stored.steps)
        name = f"{path.parent.name}/{path.name}"
        rec = sb.native_recorded
        sessions.append({
            "session": name, "steps": len(session.steps), "model": session.model
            or next((s.model for s in session.steps if s.model), None),
            "window": session_window(session)[0], "harness": sb.harness.to_json(),
            "card": sb.card.name, "compactions": len(session.compactions),
            "probes": sum(len(v) for v in probes.values()),
            "native_recorded_tokens": rec.total if rec else None,
            "native_recorded_cost": round(rec.cost(sb.card, sb.ttl), 4) if rec else None,
            "ttl": sb.ttl,
        })
        base_prompts = next(r.meter.prompts for r in runs if r.policy.name == "base")
        for r, rep in zip(runs, reports, strict=True):
            ms[rep.policy] += r.meter.render_ms
            acting = [a < b for a, b in zip(r.meter.prompts, base_prompts, strict=True)]
            hit_act, want_act = r.carriage_where(acting)
            rows.append({
                "session": name, "steps": len(session.steps), "policy": rep.policy,
                "tokens": rep.prompt_tokens, "rendered": rep.rendered_tokens,
                "x_native": rep.ratio_to_native, "x_base": rep.ratio_to_base,
                "cost": rep.cost_usd, "cost_x_native": rep.cost_ratio_to_native,
                "bill": rep.bill_usd, "cached_share": rep.cached_share,
                "expiries": rep.cache_expiries, "peak": rep.peak_prompt,
                "rewrites": rep.rewrites, "epochs": rep.epochs,
                "carriage": rep.carriage, "hit": r.hit, "want": r.want,
                "probe_hit": r.probe_hit, "probe_want": r.probe_want,
                "hit_act": hit_act, "want_act": want_act,
                "render_ms_median": rep.render_ms_median, "removals": rep.removals,
                "restore_failures": len(failures[rep.policy]),
            })
    cold_tmp.cleanup()
    return {"rows": rows, "sessions": sessions, "cold": cold, "ms": ms,
            "seconds": time.perf_counter() - t_start}


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3),
            "max": round(max(values), 3)}


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    rows = res["rows"]
    out: dict[str, Any] = {}
    for pol in POLICIES:
        mine = [r for r in rows if r["policy"] == pol]
        long = [r for r in mine if r["steps"] >= LONG]
        tot = sum(r["tokens"] for r in mine)
        cost = sum(r["cost"] for r in mine)
        want = sum(r["want"] for r in mine)
        want_act = sum(r["want_act"] for r in mine)
        pw = sum(r["probe_want"] for r in mine)
        out[pol] = {
            "tokens": tot, "cost_usd": round(cost, 2),
            "bill_usd": round(sum(r["bill"] for r in mine), 2),
            "carriage": round(sum(r["hit"] for r in mine) / want, 4) if want else None,
            "carriage_where_it_acts": round(sum(r["hit_act"] for r in mine) / want_act, 4)
            if want_act else None,
            "mentions_where_it_acts": want_act,
            "probe_recovery": round(sum(r["probe_hit"] for r in mine) / pw, 4) if pw else None,
            "long_x_native_tokens": spread([r["x_native"] for r in long]),
            "long_x_native_cost": spread([r["cost_x_native"] for r in long]),
            "long_carriage": spread([r["carriage"] for r in long if r["carriage"] is not None]),
            "sessions_above_native_cost": [r["session"] for r in mine
                                           if (r["cost_x_native"] or 0) > 1.0],
            "long_above_0_8_cost": [r["session"] for r in long if (r["cost_x_native"] or 0) > 0.8],
            "render_ms_median": round(statistics.median(res["ms"][pol]), 4),
            "render_ms_p95": round(statistics.quantiles(res["ms"][pol], n=20)[-1], 4),
            "render_ms_max": round(max(res["ms"][pol]), 3),
            "removals": sum(r["removals"] for r in mine),
            "restored_exact": sum(r["removals"] - r["restore_failures"] for r in mine),
        }
    for pol in POLICIES:
        out[pol]["x_base_tokens"] = round(out[pol]["tokens"] / out["base"]["tokens"], 3)
        out[pol]["x_native_tokens"] = round(out[pol]["tokens"] / out["native"]["tokens"], 3)
        out[pol]["x_native_cost"] = round(out[pol]["cost_usd"] / out["native"]["cost_usd"], 3)
    return out


def targets(summary: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    checks: list[tuple[str, str, bool, str]] = []
    lossy = {p: summary[p]["carriage_where_it_acts"] for p in ("mask", "compact")}
    for name in ("refold", "epoch"):
        s = summary[name]
        checks += [
            (name, f"cost <= 0.8 x native on every >= {LONG}-step session",
             not s["long_above_0_8_cost"], f"max {s['long_x_native_cost'].get('max')}"),
            (name, "cost never above native on any session", not s["sessions_above_native_cost"],
             ", ".join(s["sessions_above_native_cost"]) or "none above"),
            (name, "total tokens <= 0.6 x base", s["x_base_tokens"] <= 0.6,
             str(s["x_base_tokens"])),
            (name, "content carriage >= 0.95", (s["carriage"] or 0) >= 0.95, str(s["carriage"])),
            (name, "carriage where it acts above mask/compact's",
             all((s["carriage_where_it_acts"] or 0) > (v or 1.0) for v in lossy.values()),
             f"{s['carriage_where_it_acts']} vs mask {lossy['mask']}, "
             f"compact {lossy['compact']}"),
            (name, "render <= 1 ms/step (p95)", s["render_ms_p95"] <= 1.0,
             f"median {s['render_ms_median']}, p95 {s['render_ms_p95']}"),
            (name, "restore exact 100 %", s["restored_exact"] == s["removals"],
             f"{s['restored_exact']}/{s['removals']}"),
        ]
    for name in ("mask", "compact"):
        v = summary[name]["carriage_where_it_acts"]
        checks.append((name, "content carriage < 0.95 where it acts", v is not None and v < 0.95,
                       f"{v} over {summary[name]['mentions_where_it_acts']} mentions"))
    return checks


def _f(v: Any, fmt: str = "") -> str:
    return "" if v is None else format(v, fmt)


def print_text(res: dict[str, Any], summary: dict[str, Any], ttl: int | None) -> None:
    hdr = (f"{'session':40} {'steps':>5} {'policy':8} {'tokens':>11} {'xnat':>6} {'xbase':>6} "
           f"{'cost $':>8} {'$xnat':>6} {'cached':>6} {'exp':>3} {'peak':>7} {'rewr':>4} "
           f"{'ep':>3} {'carry':>6} {'probe':>5} {'ms/st':>6} {'rm':>4}")
    print(hdr)
    print("-" * len(hdr))
    by_session = {s["session"]: s for s in res["sessions"]}
    last = None
    for r in res["rows"]:
        if r["session"] != last:
            last = r["session"]
            s = by_session[last]
            h = s["harness"]
            print(f"# {last}: model {s['model']}, window {s['window']:,}, card {s['card']}, "
                  f"TTL {s['ttl']} s, "
                  f"harness overhead {h['overhead_tokens']:,} + {h['scale']} x rendered "
                  f"({h['source']}; mean abs err {h['mean_abs_error']})"
                  + (f"; recorded native {s['native_recorded_tokens']:,} tok "
                     f"${s['native_recorded_cost']}" if s["native_recorded_tokens"] else ""))
        probe = f"{r['probe_hit']}/{r['probe_want']}" if r["probe_want"] else ""
        print(f"{r['session'][:40]:40} {r['steps']:>5} {r['policy']:8} {r['tokens']:>11,} "
              f"{_f(r['x_native']):>6} {_f(r['x_base']):>6} {r['cost']:>8.3f} "
              f"{_f(r['cost_x_native']):>6} {r['cached_share']:>6} {r['expiries']:>3} "
              f"{r['peak']:>7,} {r['rewrites']:>4} {r['epochs']:>3} {_f(r['carriage']):>6} "
              f"{probe:>5} {r['render_ms_median']:>6} {r['removals']:>4}")
    print()
    print(f"TOTALS over {len(res['sessions'])} sessions ({res['seconds']:.1f} s; harness tokens; "
          f"each session at its model's list price, cache TTL "
          f"{'as recorded (else 300 s)' if ttl is None else f'{ttl} s'})")
    print(f"{'policy':8} {'tokens':>12} {'xnat':>6} {'xbase':>6} {'cost $':>8} {'$xnat':>6} "
          f"{'bill $':>8} {'carriage':>8} {'c.acts':>6} {'probes':>6} "
          f"{'spread $xnat (>=30 steps)':>27} {'spread carriage':>21} {'ms p95':>6} "
          f"{'restored':>11}")
    for name, s in summary.items():
        sp = s["long_x_native_cost"]
        spread_txt = f"{sp['min']}/{sp['median']}/{sp['max']}" if sp else ""
        sc = s["long_carriage"]
        carriage_txt = f"{sc['min']}/{sc['median']}/{sc['max']}" if sc else ""
        print(f"{name:8} {s['tokens']:>12,} {s['x_native_tokens']:>6} {s['x_base_tokens']:>6} "
              f"{s['cost_usd']:>8} {s['x_native_cost']:>6} {s['bill_usd']:>8} "
              f"{_f(s['carriage']):>8} {_f(s['carriage_where_it_acts']):>6} "
              f"{_f(s['probe_recovery']):>6} {spread_txt:>27} {carriage_txt:>21} "
              f"{s['render_ms_p95']:>6} "
              f"{s['restored_exact']:>5}/{s['removals']:<5}")
    print("(spread = min/median/max over the sessions with >= 30 steps; "
          "c.acts = carriage over the calls whose prompt is smaller than base's)")
    c = res["cold"]
    print(f"restores read back from a cold store: {c['nodes']} step originals "
          f"({c['bytes']:,} bytes) written, every removal re-read and compared in "
          f"{c['seconds']:.1f} s")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--transcripts", type=Path, default=DATA / "transcripts")
    ap.add_argument("--probes", type=Path, default=DATA / "probes" / "dev-probes.json")
    ap.add_argument("--ttl", type=int, default=None,
                    help="cache TTL in seconds (300 or 3600; default: per session, what its "
                         "recorded usage shows, else 300)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    files = sorted(p for p in args.transcripts.glob("*/*") if p.is_file()
                   and p.suffix in (".jsonl", ".json"))
    if not files:
        print(f"no transcripts under {args.transcripts}", file=sys.stderr)
        return 2
    res = run(files, args.probes, args.ttl)
    summary = summarize(res)
    checks = targets(summary)
    if args.json:
        print(json.dumps({"sessions": res["sessions"], "rows": res["rows"], "totals": summary,
                          "targets": [{"policy": p, "target": t, "met": ok, "measured": m}
                                      for p, t, ok, m in checks],
                          "seconds": round(res["seconds"], 2), "cold_store": res["cold"]},
                         indent=2))
    else:
        print_text(res, summary, args.ttl)
        for pol, label, ok, measured in checks:
            print(f"  {pol:7} {label:48} {'MET' if ok else 'MISSED':6} {measured}")
    return 0 if all(ok for _p, _l, ok, _m in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
