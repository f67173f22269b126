"""The model-API proxy, measured with the real Claude Code on a long scripted session.

    python bench/proxy_bench.py [--calls 160] [--json]

The real ``@anthropic-ai/claude-code`` (pinned, from the e2e npm cache) runs one ``-p`` prompt
against a loopback mock of the Messages API that scripts a long session: ``--calls`` Bash tool
calls whose outputs are real command outputs of mixed sizes (300 B to ~20 kB), almost all
distinct, each reply naming a row of the output before it. The mock reports usage computed
from what it received (so Claude Code's own auto-compaction, at a 200k window, fires on the
real size of its prompt). The same script runs twice:

- ``direct``: Claude Code straight to the mock;
- ``proxy``: ``contextfork run -- claude`` (the per-user proxy, default policy; the caller's
  ``CONTEXTFORK_PROXY_*`` knobs are passed on). Near the end the scripted model reads a fold
  note and runs the command it names to peek step 1.

Reported per run, from the requests the mock received (what the model would have been sent):
native compactions (summary requests), the largest request (tokens ~ JSON chars / 4 of system,
tools and messages) against 0.4 x the 200k window, tool pairs valid in every request, the
cached share of prompt tokens and the cost under the replay's cache model
(``contextfork.render.bill``: a call reads the longest common prefix with the previous call
from the cache, writes the rest; Sonnet list prices, output tokens excluded: the same in both
runs), the peek's bytes against step 1's original output, and the time the proxy added per
request (its log: parse, render, store, verify, splice), with where it went.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contextfork.proxy.anthropic import pair_faults  # noqa: E402
from contextfork.render.metrics import PriceCard  # noqa: E402
from tests.e2e.clients import install_clients, run_bounded  # noqa: E402
from tests.e2e.mock_anthropic import MockAnthropic, Reply, ToolUse, Usage, request_text  # noqa: E402
from tests.e2e.rigs import ClaudeRig, read_jsonl  # noqa: E402

WINDOW = 200_000
SIZES = (300, 2500, 800, 9000, 1500, 20000, 600, 4000, 1200, 6000)
PEEK = re.compile(r"`(contextfork context peek --session (\S+) --step N)`")
CARD = PriceCard()  # Sonnet-class list prices: the replay's default card


def command(i: int) -> str:
    lines = max(1, SIZES[i % len(SIZES)] // 14)
    return f"seq 1 {lines} | sed 's/^/b{i}_row_/'"


def original_output(i: int) -> str:
    lines = max(1, SIZES[i % len(SIZES)] // 14)
    return "\n".join(f"b{i}_row_{n}" for n in range(1, lines + 1))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def prompt_text(body: dict[str, Any]) -> str:
    """What the model reads, in one canonical text (breakpoints left out: they move)."""
    return json.dumps([_strip(body.get("system")), _strip(body.get("tools")),
                       _strip(body.get("messages"))], ensure_ascii=False, separators=(",", ":"))


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def lcp(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def script(mock: MockAnthropic, calls: int, peek: bool, latency: float = 0.0) -> dict[str, Any]:
    """The scripted model: replies carry usage computed from the request they answer (input
    tokens = its size), so the client sees the real size of what it sent."""
    got: dict[str, Any] = {}

    def step(i: int) -> Reply:
        def make(body: dict[str, Any]) -> Reply:
            time.sleep(latency)  # the model thinking (0: the mock answers at once)
            usage = Usage(input_tokens=tokens(prompt_text(body)), output_tokens=60)
            if peek and i == calls - 4:
                m = PEEK.search(request_text(body))
                if m:
                    got["peek_command"] = m.group(1).replace("N", "1")
                    return Reply(text="Reading step 1 back.", usage=usage, tool_uses=[
                        ToolUse("Bash", {"command": got["peek_command"] + " --max-chars 20000",
                                         "description": "peek"})])
            return Reply(text=f"Step {i}: saw b{i - 1}_row_3.", usage=usage,
                         tool_uses=[ToolUse("Bash", {"command": command(i),
                                                     "description": "list"})])
        return Reply(make=make)

    mock.script(*[step(i) for i in range(calls)],
                Reply(make=lambda body: Reply(text="All listings done.",
                                              usage=Usage(input_tokens=tokens(prompt_text(body))))))
    return got


def run_once(mode: str, calls: int, prefix: Path, latency: float = 0.0) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"proxy-bench-{mode}-"))
    with MockAnthropic() as mock:
        rig = ClaudeRig.create(tmp, prefix, mock)
        rig.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(WINDOW)
        got = script(mock, calls, peek=mode == "proxy", latency=latency)
        args = ["-p", "Make the listings, one command per step", "--output-format", "json",
                "--allowedTools", "Bash"]
        started = time.monotonic()
        if mode == "proxy":
            pdir = tmp / "proxy-dir"
            pdir.mkdir(mode=0o700)
            knobs = {k: v for k, v in os.environ.items() if k.startswith("CONTEXTFORK_PROXY_")}
            env = {**rig.env, **knobs, "CONTEXTFORK_PROXY_DIR": str(pdir),
                   "CONTEXTFORK_SERVER": "off", "CONTEXTFORK_PROXY_GRACE": "1"}
            if os.environ.get("PYTHONPATH"):
                env["PYTHONPATH"] = os.environ["PYTHONPATH"]
            run = run_bounded([sys.executable, "-m", "contextfork", "run", "--", str(rig.bin),
                               *args], cwd=rig.repo.path, env=env, timeout=3600)
        else:
            run = run_bounded([str(rig.bin), *args], cwd=rig.repo.path, env=rig.env,
                              timeout=3600)
        seconds = time.monotonic() - started
        if run.returncode != 0:
            raise SystemExit(f"claude failed ({mode})\n{run}")
        mains = mock.main_requests()
        compacts = mock.message_requests("compact")
        log = read_jsonl(rig.repo.path / ".contextfork" / "logs" / "proxy.log")
        return measure(mode, mains, compacts, log, got, seconds)


def measure(mode: str, mains: list[dict[str, Any]], compacts: list[dict[str, Any]],
            log: list[dict[str, Any]], got: dict[str, Any], seconds: float) -> dict[str, Any]:
    texts = [prompt_text(b) for b in mains]
    sizes = [tokens(t) for t in texts]
    cached = [0] + [tokens(t[: lcp(p, t)]) for p, t in pairwise(texts)]
    written = [s - c for s, c in zip(sizes, cached, strict=True)]
    cost = sum(CARD.cost(0, c, w) for c, w in zip(cached, written, strict=True))
    out: dict[str, Any] = {
        "mode": mode, "calls": len(mains), "seconds": round(seconds, 1),
        "native_compactions": len(compacts),
        "largest_request_tokens": max(sizes), "largest_over_window": round(max(sizes) / WINDOW, 3),
        "pairs_valid": all(pair_faults(b["messages"]) == set() for b in mains),
        "prompt_tokens": sum(sizes), "cached_share": round(sum(cached) / sum(sizes), 3),
        "cost_dollars": round(cost, 4),
    }
    if mode == "proxy":
        peek_text = ""
        peek_ids = set()
        for b in mains:
            for m in b["messages"]:
                for p in m.get("content") if isinstance(m.get("content"), list) else []:
                    if p.get("type") == "tool_use" and "context peek" in json.dumps(p):
                        peek_ids.add(p.get("id"))
                    if (p.get("type") == "tool_result" and p.get("tool_use_id") in peek_ids
                            and not peek_text):  # as the tool gave it (later: the tail moved)
                        peek_text = json.dumps(p["content"])
        out["peek_command"] = got.get("peek_command")
        out["peek_exact"] = bool(peek_text) and json.dumps(original_output(0))[1:-1] in peek_text
        reqs = [r for r in log if r.get("event") == "request" and r.get("endpoint")]
        ms = sorted(float(r["ms"]) for r in reqs)
        phases: dict[str, list[float]] = {}
        for r in reqs:
            for k, v in {**(r.get("phases_ms") or {}), "thread_wait": r.get("thread_wait_ms")}.items():
                if k != "stored" and v is not None:
                    phases.setdefault(k, []).append(float(v))
        stored = sorted(float(r["ms"]) for r in reqs if (r.get("phases_ms") or {}).get("stored"))
        plain = sorted(float(r["ms"]) for r in reqs
                       if not (r.get("phases_ms") or {}).get("stored"))
        cpu = sorted(float(r["cpu_ms"]) for r in reqs if r.get("cpu_ms") is not None)
        out["overhead_cpu_ms"] = {"median": round(statistics.median(cpu), 2),
                                  "p95": round(cpu[int(len(cpu) * 0.95)], 2)} if cpu else None
        out["overhead_ms"] = {
            "median": round(statistics.median(ms), 2), "p95": round(ms[int(len(ms) * 0.95)], 2),
            "max": round(ms[-1], 2),
            "median_without_store": round(statistics.median(plain), 2) if plain else None,
            "p95_without_store": round(plain[int(len(plain) * 0.95)], 2) if plain else None,
            "calls_that_stored": len(stored),
            "median_of_calls_that_stored": round(statistics.median(stored), 2) if stored else None,
            "phase_medians": {k: round(statistics.median(v), 2) for k, v in phases.items()},
            "phase_p95": {k: round(sorted(v)[int(len(v) * 0.95)], 2) for k, v in phases.items()},
        }
        out["actions"] = {a: sum(1 for r in reqs if r.get("action") == a)
                          for a in ("edit", "as-is", "pass-through")}
        out["pass_reasons"] = sorted({str(r.get("why")) for r in reqs if r.get("why")})
        out["epochs"] = max((int(r.get("epochs", 0)) for r in reqs), default=0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=160)
    ap.add_argument("--latency-ms", type=int, default=0,
                    help="the mock's answer time per call (a real model's is seconds)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    prefix = install_clients()
    direct = run_once("direct", args.calls, prefix, args.latency_ms / 1000)
    proxy = run_once("proxy", args.calls, prefix, args.latency_ms / 1000)
    ratio = round(proxy["cost_dollars"] / direct["cost_dollars"], 3)
    report = {"direct": direct, "proxy": proxy, "cost_ratio": ratio}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"$ python bench/proxy_bench.py --calls {args.calls} --latency-ms {args.latency_ms}")
    for r in (direct, proxy):
        print(f"\n[{r['mode']}] {r['calls']} model calls in {r['seconds']} s")
        print(f"  native compactions      {r['native_compactions']}")
        print(f"  largest request         {r['largest_request_tokens']} tokens "
              f"({r['largest_over_window']} x the {WINDOW} window)")
        print(f"  tool pairs valid        {r['pairs_valid']}")
        print(f"  prompt tokens           {r['prompt_tokens']}, cached share {r['cached_share']}")
        print(f"  cost (cache model)      ${r['cost_dollars']}")
    print(f"\ncost ratio proxy / direct: {ratio}")
    print(f"peek of step 1: {proxy.get('peek_command')!r} exact bytes: {proxy.get('peek_exact')}")
    print(f"actions: {proxy['actions']}; epochs {proxy['epochs']}; "
          f"pass-through reasons {proxy['pass_reasons']}")
    print(f"overhead per request (ms, wall): {json.dumps(proxy['overhead_ms'])}")
    print(f"overhead per request (ms, CPU of the render thread): "
          f"{json.dumps(proxy['overhead_cpu_ms'])}")
    print(f"machine load average while measuring: {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
