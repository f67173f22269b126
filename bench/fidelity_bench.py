"""Page-in fidelity on real sessions: does the detail the agent later needed come back?

Runs every probe through the real hook path, as Claude Code runs it (whole processes):
1. the session is cut where it was compacted (the state at the compaction) and
   `contextfork hooks run pre-compact` folds it into a fresh repository's cold store;
2. `contextfork hooks run user-prompt-submit` gets each probe's query — the term query ("What did
   we find earlier about X?") and the agent's own next text — and what it injects
   (`additionalContext`) is checked.

Figures: term recovered (the term is in the injected text), evidence hit (a line of the
evidence tool output that holds the term is in the injected text), injected tokens (median,
p90; o200k) and the turn budget. Probes: `../shared/data/probes/dev-probes.json` (16, from the
development Claude Code session) plus, with `--extra`, probes this script derives from other
shared transcripts with a cut at the middle of the session. The derivation rule (a long
identifier the agent used after the cut, seen first in tool output before it) is this
script's own regex, not the cold store's identifier rule, so the measure does not grade the
retrieval's homework.

    python bench/fidelity_bench.py [--extra] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PROBES = SHARED / "probes" / "dev-probes.json"
TRANSCRIPTS = SHARED / "transcripts"
TURN_BUDGET = 3500

# The probe rule (independent of contextfork.cold.identifiers): paths, CamelCase with two or
# more humps, snake_case with two or more underscores; at least 10 characters.
_PROBE_TERM = re.compile(
    r"(?<![\w/.-])(/?(?:[\w.-]+/)+[\w.-]+\.\w{1,6}|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}"
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+){2,})(?![\w-])"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"})
    return env


def _hook(event: str, payload: dict[str, Any], cwd: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "contextfork", "hooks", "run", event],
        input=json.dumps(payload), capture_output=True, text=True, cwd=cwd, env=_env(),
        timeout=600, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"hook {event} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def _repo(where: Path) -> Path:
    where.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=where, check=True, env=_env())
    (where / "README.md").write_text("# bench\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=where, check=True, env=_env())
    subprocess.run(["git", "commit", "-qm", "init"], cwd=where, check=True, env=_env())
    return where


def _unescape(text: str) -> str:
    """Injected raw JSONL shows a line as JSON-escaped text; the model reads both forms."""
    return text.replace("\\n", "\n").replace('\\"', '"').replace("\\t", "\t").replace("\\\\", "\\")


def _result_texts(line: dict[str, Any]) -> list[str]:
    out: list[str] = []
    content = (line.get("message") or {}).get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                c = block.get("content")
                if isinstance(c, str):
                    out.append(c)
                elif isinstance(c, list):
                    out += [x.get("text", "") for x in c if isinstance(x, dict)]
    tur = line.get("toolUseResult")
    if isinstance(tur, dict):
        out += [v for v in tur.values() if isinstance(v, str)]
        f = tur.get("file")
        if isinstance(f, dict) and isinstance(f.get("content"), str):
            out.append(f["content"])
    return out


def evidence_snippets(lines: list[bytes], evidence: list[int], term: str) -> list[str]:
    """The lines of the evidence tool outputs that hold the term (stripped, ≥ 1 char)."""
    out: list[str] = []
    for n in evidence:
        try:
            rec = json.loads(lines[n])
        except (IndexError, ValueError):
            continue
        for text in _result_texts(rec):
            out += [ln.strip() for ln in text.splitlines() if term in ln and ln.strip()]
    return out


def _cut_claude(src: Path, dst: Path) -> int:
    """Everything before the first compact_boundary line; returns that line's number."""
    raw = src.read_bytes().splitlines(keepends=True)
    for i, line in enumerate(raw):
        if b'"compact_boundary"' in line:
            dst.write_bytes(b"".join(raw[:i]))
            return i
    raise SystemExit(f"{src.name}: no compact_boundary line")


def _tokens(text: str) -> int:
    from contextfork.tokens import count_tokens

    return count_tokens(text)


def run_probe_set(
    name: str, transcript: Path, probes: list[dict[str, Any]], work: Path
) -> list[dict[str, Any]]:
    repo = _repo(work / name)
    session_id = f"bench-{name}"
    _hook("pre-compact", {"session_id": session_id, "transcript_path": str(transcript),
                          "cwd": str(repo), "trigger": "auto", "hook_event_name": "PreCompact"},
          repo)  # fmt: skip
    rows = []
    for p in probes:
        for kind in ("query_term", "query_natural"):
            out = _hook("user-prompt-submit", {
                "session_id": session_id, "transcript_path": str(transcript), "cwd": str(repo),
                "prompt": p[kind], "hook_event_name": "UserPromptSubmit"}, repo)  # fmt: skip
            ctx = (out.get("hookSpecificOutput") or {}).get("additionalContext", "") or ""
            seen = ctx + "\n" + _unescape(ctx)
            snippets = p["snippets"]
            rows.append({
                "set": name, "term": p["term"], "kind": kind,
                "recovered": p["term"] in seen,
                "evidence": bool(snippets) and any(s in seen for s in snippets),
                "tokens": _tokens(ctx) if ctx else 0,
                "chars": len(ctx),
            })  # fmt: skip
    return rows


def dev_probes() -> tuple[Path, list[dict[str, Any]]]:
    probes = json.loads(PROBES.read_text(encoding="utf-8"))
    src = TRANSCRIPTS / "claude-code" / probes[0]["session"]
    lines = src.read_bytes().splitlines()
    for p in probes:
        p["snippets"] = evidence_snippets(lines, p["evidence_lines"], p["term"])
    return src, probes


def derive_probes(path: Path, limit: int = 12) -> tuple[list[dict[str, Any]], int]:
    """Probes for a session with no recorded compaction: a cut at the middle step."""
    from contextfork.transcript import load_session
    from contextfork.transcript.model import TextBlock, ToolCall, ToolResult

    steps = load_session(path).steps
    cut = len(steps) // 2
    first_seen: dict[str, tuple[int, str]] = {}
    for s in steps[:cut]:
        for b in s.blocks:
            if isinstance(b, ToolResult):
                for ln in b.content.splitlines():
                    for m in _PROBE_TERM.finditer(ln):
                        first_seen.setdefault(m.group(1), (s.index, ln.strip()))
    said_before = " ".join(
        b.text for s in steps[:cut] for b in s.blocks
        if isinstance(b, TextBlock) and b.role == "assistant"
    )
    probes: list[dict[str, Any]] = []
    for s in steps[cut:]:
        for b in s.blocks:
            text = b.text if isinstance(b, TextBlock) and b.role == "assistant" else (
                json.dumps(b.input, ensure_ascii=False) if isinstance(b, ToolCall) else "")
            for m in _PROBE_TERM.finditer(text):
                term = m.group(1)
                if term in first_seen and term not in said_before and len(term) >= 10 and not any(
                        q["term"] == term for q in probes):
                    snippets = [ln.strip() for st in steps[:cut] for bl in st.blocks
                                if isinstance(bl, ToolResult) for ln in bl.content.splitlines()
                                if term in ln and ln.strip()]  # fmt: skip
                    probes.append({"term": term, "query_term": f"What did we find earlier about {term}?",
                                   "query_natural": text[max(0, m.start() - 200): m.end() + 200],
                                   "snippets": snippets})  # fmt: skip
        if len(probes) >= limit:
            break
    return probes[:limit], cut


def _cut_steps(path: Path, cut: int, dst: Path) -> None:
    """The source file up to the end of step ``cut`` (its last raw line), byte-exact."""
    from contextfork.transcript import load_session

    steps = load_session(path).steps
    if path.suffix == ".json":  # one JSON document (mini-swe-agent): keep the first messages
        doc = json.loads(path.read_bytes())
        doc["messages"] = doc["messages"][: sum(len(s.raw) for s in steps[:cut])]
        dst.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        return
    last = steps[cut - 1].raw[-1]
    data = path.read_bytes()
    dst.write_bytes(data[: last.offset + len(last.text.encode("utf-8"))])


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for kind in ("query_term", "query_natural"):
        sel = [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        toks = sorted(r["tokens"] for r in sel)
        out.append({
            "query": "term query" if kind == "query_term" else "agent's next text",
            "probes": len(sel),
            "term_recovered": sum(r["recovered"] for r in sel) / len(sel),
            "evidence_hit": sum(r["evidence"] for r in sel) / len(sel),
            "tokens_median": statistics.median(toks),
            "tokens_p90": toks[min(len(toks) - 1, int(0.9 * len(toks)))],
            "tokens_max": toks[-1],
        })  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", action="store_true", help="also derive probes from pi/codex/mini-swe-agent sessions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not PROBES.is_file():
        print(f"no probes at {PROBES} (../shared is absent)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cf-fidelity-") as tmp:
        work = Path(tmp)
        src, probes = dev_probes()
        cut = work / "dev-cut.jsonl"
        _cut_claude(src, cut)
        rows += run_probe_set("dev", cut, probes, work)
        if args.extra:
            for path in sorted((TRANSCRIPTS / "pi").glob("*.jsonl")) + sorted(
                    (TRANSCRIPTS / "mini-swe-agent").glob("*.traj.json"))[:2]:
                extra, at = derive_probes(path)
                if not extra:
                    continue
                dst = work / f"{path.stem}-cut{path.suffix}"
                _cut_steps(path, at, dst)
                rows += run_probe_set(path.stem[:20], dst, extra, work)
    summary = summarize(rows)
    sets = sorted({r["set"] for r in rows})
    if args.json:
        print(json.dumps({"summary": summary, "sets": sets, "rows": rows}, indent=1))
        return 0
    print(f"probe sets: {', '.join(sets)}; turn budget {TURN_BUDGET} tokens")
    print(f"{'query':<20} {'probes':>6} {'term':>6} {'evidence':>9} {'tok med':>8} {'p90':>6} {'max':>6}")
    for s in summary:
        print(f"{s['query']:<20} {s['probes']:>6} {s['term_recovered']:>6.0%} {s['evidence_hit']:>9.0%} "
              f"{s['tokens_median']:>8.0f} {s['tokens_p90']:>6} {s['tokens_max']:>6}")
    for name in sets:
        sel = [r for r in rows if r["set"] == name]
        print(f"  {name}: {sum(r['recovered'] for r in sel)}/{len(sel)} recovered, "
              f"{sum(r['evidence'] for r in sel)}/{len(sel)} evidence")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
