"""Role slices benchmark (prints figures; not a test).

    python bench/slice_bench.py [--data DIR] [--every 12] [--horizon 15] [--budget 9000]

For each Claude Code dev session in DIR/transcripts/claude-code, at each spawn point:
- real spawns: the parent's Task/Agent calls whose subagent transcript is recorded
  (``<session>/subagents/agent-<id>.jsonl``; compaction agents skipped);
- pseudo spawns (synthetic): every ``--every`` tool calls of the parent, the next ``--horizon``
  tool calls of the parent itself stand in for a subagent handed the rest of the work.

Size: the slice of each role (o200k tokens) against (a) nothing and (b) the parent's whole live
context at that point (the recorded usage of its last main-chain response: what a fork
subagent inherits). Relevance probes come from the subagent's recorded calls by a rule that
does not use the slicer's: a file the subagent Read that the parent's calls before the spawn
already named (any tool input), and a shell command it ran that the parent had run (same text).
A probe is held when the slice text names the file (or holds the command); "with content" also
needs a block of the slice whose label points at a parent call on that file or command. The
baseline "nothing" holds what the delegation prompt alone names (pseudo spawns: nothing).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contextfork.slice import roles as R  # noqa: E402
from contextfork.slice.build import cut  # noqa: E402
from contextfork.slice.live import AGENT_TOOLS, read_live  # noqa: E402
from contextfork.tokens import count_tokens  # noqa: E402

ROLES = sorted(R.BUILTIN_ROLES)


def data_dir(given: str | None) -> Path:
    for cand in ([Path(given)] if given else []) + [ROOT.parent / "shared/data", ROOT.parent.parent / "shared/data"]:
        if (cand / "transcripts").is_dir():
            return cand
    sys.exit("no ../shared/data/transcripts here: pass --data DIR")


def lines_of(path: Path) -> list[tuple[int, bytes, dict[str, Any]]]:
    out, off = [], 0
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = {}
        out.append((off, raw, obj if isinstance(obj, dict) else {}))
        off += len(raw)
    return out


def tool_uses(obj: dict[str, Any]) -> list[dict[str, Any]]:
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"] if isinstance(content, list) else []


def live_tokens(lines: list[tuple[int, bytes, dict[str, Any]]]) -> int | None:
    """The recorded context of the last main-chain response (input + cache creation + read)."""
    for _, _, obj in reversed(lines):
        if obj.get("type") == "assistant" and not obj.get("isSidechain"):
            u = (obj.get("message") or {}).get("usage") or {}
            total = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            if total:
                return total
    return None


def norm(cmd: str) -> str:
    return " ".join(cmd.split())


def probes(parent_calls: list[dict[str, Any]], sub_calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, value) of what the subagent re-read or re-ran (independent of the slicer)."""
    named = json.dumps([c.get("input") for c in parent_calls])
    ran = {norm(str(c["input"].get("command"))) for c in parent_calls if c.get("name") == "Bash" and isinstance(c.get("input"), dict)}
    out: list[tuple[str, str]] = []
    for c in sub_calls:
        inp = c.get("input") if isinstance(c.get("input"), dict) else {}
        if c.get("name") == "Read" and isinstance(inp.get("file_path"), str) and json.dumps(inp["file_path"])[1:-1] in named:
            out.append(("file", inp["file_path"]))
        elif c.get("name") == "Bash" and isinstance(inp.get("command"), str) and norm(inp["command"]) in ran:
            out.append(("command", norm(inp["command"])))
    return list(dict.fromkeys(out))


def held(slice_out: dict[str, Any], probe: tuple[str, str]) -> tuple[bool, bool]:
    text = slice_out["text"]
    kind, value = probe
    if kind == "command":
        hit = value in norm(text)
        return hit, hit  # a command is its own content
    hit = value in text
    with_content = False
    for para in text.split("\n["):  # each block starts with its [label]
        head, _, body = para.partition("]\n")
        if value in body.split("\n", 1)[0] and ("live transcript" in head or "step " in head) and "\n" in body.strip():
            with_content = True
    return hit, with_content


def spawns(path: Path, every: int, horizon: int) -> list[dict[str, Any]]:
    lines = lines_of(path)
    main = [(off, raw, o) for off, raw, o in lines if not o.get("isSidechain")]
    out: list[dict[str, Any]] = []
    sub_dir = path.with_suffix("") / "subagents"
    # real spawns: the Task/Agent call whose recorded subagent starts with the same prompt
    recorded = {}
    if sub_dir.is_dir():
        for f in sorted(sub_dir.glob("agent-*.jsonl")):
            if "compact" in f.name:
                continue
            sub = lines_of(f)
            first = next((o for _, _, o in sub if o.get("type") == "user"), {})
            prompt = (first.get("message") or {}).get("content")
            calls = [t for _, _, o in sub for t in tool_uses(o)]
            recorded[str(prompt)[:200]] = (f.name, calls)
    calls_seen: list[dict[str, Any]] = []
    for i, (off, _raw, obj) in enumerate(main):
        for t in tool_uses(obj):
            if t.get("name") in AGENT_TOOLS:
                prompt = str((t.get("input") or {}).get("prompt"))
                key = prompt[:200]
                out.append({"kind": "real", "cut": off + len(_raw), "task": prompt,
                            "agent_type": (t.get("input") or {}).get("subagent_type"),
                            "sub": recorded.get(key, (None, []))[0], "sub_calls": recorded.get(key, (None, []))[1],
                            "parent_calls": list(calls_seen), "lines": main[: i + 1]})
            calls_seen.append(t)
    # pseudo spawns: cut after every `every` calls; the next `horizon` calls are the "subagent"
    flat: list[tuple[int, dict[str, Any], int]] = []  # (line index, call, end offset)
    for i, (off, raw, obj) in enumerate(main):
        for t in tool_uses(obj):
            flat.append((i, t, off + len(raw)))
    for k in range(every, len(flat) - horizon, every):
        i, _t, end = flat[k - 1]
        # the cut goes after the result of call k (the next main line that is not the call)
        res_end = end
        for off, raw, o in main[i + 1 : i + 4]:
            if o.get("type") == "user":
                res_end = off + len(raw)
                break
        out.append({"kind": "pseudo", "cut": res_end, "task": "", "agent_type": None, "sub": f"calls {k + 1}-{k + horizon}",
                    "sub_calls": [c for _, c, _ in flat[k : k + horizon]],
                    "parent_calls": [c for _, c, _ in flat[:k]],
                    "lines": [x for x in main if x[0] < res_end]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--horizon", type=int, default=15)
    ap.add_argument("--budget", type=int, default=R.DEFAULT_BUDGET)
    args = ap.parse_args()
    base = data_dir(args.data) / "transcripts" / "claude-code"
    rows: dict[str, dict[str, list[float]]] = {r: {"ratio": [], "tokens": [], "files": [], "files_c": [], "cmds": []} for r in ROLES}
    nothing: dict[str, list[int]] = {"files": [0, 0], "cmds": [0, 0]}
    totals = {"spawns": 0, "real": 0, "probes_file": 0, "probes_cmd": 0, "ms": []}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(base.glob("*.jsonl")):
            for sp in spawns(path, args.every, args.horizon):
                prefix = Path(tmp) / "parent.jsonl"
                prefix.write_bytes(path.read_bytes()[: sp["cut"]])
                view = read_live(prefix)
                live = live_tokens(sp["lines"])
                ps = probes(sp["parent_calls"], sp["sub_calls"])
                totals["spawns"] += 1
                totals["real"] += sp["kind"] == "real"
                nf = sum(k == "file" for k, _ in ps)
                nc = len(ps) - nf
                totals["probes_file"] += nf
                totals["probes_cmd"] += nc
                for k, v in ps:  # the delegation prompt alone ("nothing" besides the prompt)
                    slot = "files" if k == "file" else "cmds"
                    nothing[slot][0] += v in sp["task"]
                    nothing[slot][1] += 1
                tag = f"{path.name[:12]} {sp['kind']} {sp['sub']}"
                line = [f"{tag:<44} live {live or 0:>7} tok  probes {nf}f/{nc}c"]
                for role in ROLES:
                    spec = R.resolve(role, {}, args.budget)
                    assert spec is not None
                    t0 = time.perf_counter()
                    out = cut(view, None, None, spec, agent_type=sp["agent_type"], session=None, task=sp["task"])
                    totals["ms"].append((time.perf_counter() - t0) * 1000)
                    assert len(out["text"]) <= args.budget
                    tok = count_tokens(out["text"]) if out["text"] else 0
                    row = rows[role]
                    row["tokens"].append(tok)
                    if live:
                        row["ratio"].append(tok / live)
                    for p in ps:
                        hit, with_content = held(out, p)
                        if p[0] == "file":
                            row["files"].append(hit)
                            row["files_c"].append(with_content)
                        else:
                            row["cmds"].append(hit)
                    line.append(f"{role[:4]} {tok:>5}")
                print("  ".join(line))
    print()
    print(f"spawn points: {totals['spawns']} ({totals['real']} real Task/Agent calls, the rest pseudo); "
          f"probes: {totals['probes_file']} files re-read, {totals['probes_cmd']} commands re-run; budget {args.budget} chars")
    print(f"(a) nothing (the delegation prompt alone): holds {nothing['files'][0]}/{nothing['files'][1]} file probes, "
          f"{nothing['cmds'][0]}/{nothing['cmds'][1]} command probes; 0 tokens of the parent")
    print("(b) the parent's whole live context holds every probe by construction (the parent had them)")
    print(f"{'role':<9} {'median tok':>10} {'max tok':>8} {'median % of live':>17} {'max %':>6} "
          f"{'files named':>12} {'w/ content':>11} {'commands':>9} {'all probes':>11}")
    for role in ROLES:
        r = rows[role]
        def pct(xs: list[float]) -> str:
            return f"{100 * sum(xs) / len(xs):5.1f}%" if xs else "   n/a"
        allp = r["files"] + r["cmds"]
        print(f"{role:<9} {statistics.median(r['tokens']):>10.0f} {max(r['tokens']):>8} "
              f"{100 * statistics.median(r['ratio']):>16.2f}% {100 * max(r['ratio']):>5.1f}% "
              f"{pct(r['files']):>12} {pct(r['files_c']):>11} {pct(r['cmds']):>9} {pct(allp):>11}")
    print(f"slice cut time (in-process, live view read once per spawn): median "
          f"{statistics.median(totals['ms']):.1f} ms, max {max(totals['ms']):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
