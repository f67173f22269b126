"""Page-in fidelity on real sessions: does the *source* the agent later needed come back?

Runs every probe through the real hook path, as Claude Code runs it (whole processes):
1. the session is cut where it was compacted (the state at the compaction) and
   `contextfork hooks run pre-compact` folds it into a fresh repository's cold store;
2. `contextfork hooks run user-prompt-submit` gets each probe in four phrasings (the template
   "What did we find earlier about X?", the bare term, and two plain requests), plus, for a
   path, its basename and a truncated prefix; what it injects (`additionalContext`) is checked.
   For the dev session the prompt hook sees the transcript as the harness holds it then: the
   cut plus the compact boundary and the summary.

Figures per set and phrasing: term recovered (the term is in the injected text — passes by
construction once a window is cut around it), evidence step (a block of the step whose tool
output or file read first carried the term is injected), evidence line (a line of that output
that holds the term *and more* is in the injected text), recall@10 (`fold recall` has that step
in its first 10 hits), steps injected (mean) and injected tokens (median, p90, max; o200k).

Probes: `../shared/data/probes/dev-probes.json` (16 terms of the dev Claude Code session), plus
up to 12 per recorded pi and mini-swe-agent session, derived with a cut at the middle step: a
term the agent used after the cut, that a tool output carried before it and that the agent had
not itself written before it. The term rule, the origin step and its evidence lines are this
script's own (a regex and substring search), not the cold store's identifier, ranking or filler
rules, so the measure does not grade the retrieval's homework.

Split (fixed by session before any tuning): `--split tune` runs the dev set and two
mini-swe-agent runs (django-16560, matplotlib-24177), the only sets page-in rules were tuned
on; `--split heldout` runs the pi session and the other three mini-swe-agent runs.

    python bench/fidelity_bench.py [--split tune|heldout|all] [--json]
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
# ``../shared/data`` beside the checkout (or beside any parent, for a git worktree).
SHARED = next((a / "shared" / "data" for a in ROOT.parents if (a / "shared" / "data").is_dir()),
              ROOT.parent / "shared" / "data")
PROBES = SHARED / "probes" / "dev-probes.json"
TRANSCRIPTS = SHARED / "transcripts"
TURN_BUDGET = 3500

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


QUERY_KINDS = ("template", "bare", "plain_where", "plain_pull")
PATH_KINDS = ("basename", "prefix")
PHRASINGS = {
    "template": "What did we find earlier about {t}?",
    "bare": "{t}",
    "plain_where": "Where did {t} come from?",
    "plain_pull": "Pull up {t} again so we can fix it.",
}
# Split by session, fixed before tuning: page-in rules were tuned only on these sets; the
# others were scored once, after, and never looked at probe by probe while tuning.
TUNE_SETS = frozenset({"dev", "django__django-16560", "matplotlib__matplotlib-24177"})


def phrasings(term: str) -> dict[str, str]:
    """The four phrasings of every probe, plus two shorter names of a path."""
    out = {k: v.format(t=term) for k, v in PHRASINGS.items()}
    if "/" in term.strip("/"):
        base = term.rstrip("/").rsplit("/", 1)[-1]
        out["basename"] = PHRASINGS["template"].format(t=base)
        # a path cut short, as a person types it before completing it: its first 60 %
        out["prefix"] = PHRASINGS["template"].format(t=term[: max(8, len(term) * 3 // 5)])
    return out


def origin_of(steps: list[Any], term: str) -> tuple[int | None, list[str]]:
    """The step whose tool output (or file read) first carried ``term``, and the lines of that
    output that hold the term *and more* (the evidence a person wants back, not the echo)."""
    from contextfork.transcript.model import ToolCall, ToolResult

    for s in steps:
        lines: list[str] = []
        read = False
        for b in s.blocks:
            if isinstance(b, ToolResult):
                lines += [ln.strip() for ln in b.content.splitlines()
                          if term in ln and ln.strip() and ln.strip() != term]  # fmt: skip
            elif isinstance(b, ToolCall) and "/" in term:
                arg = next((v for k, v in b.input.items()
                            if k in ("file_path", "path") and isinstance(v, str)), "")  # fmt: skip
                read = read or (arg == term or arg.endswith("/" + term.lstrip("/")))
        if lines or read:
            if not lines:  # a file read: its content is the evidence (first non-empty lines)
                lines = [ln.strip() for b in s.blocks if isinstance(b, ToolResult)
                         for ln in b.content.splitlines()[:40] if len(ln.strip()) > 12][:20]  # fmt: skip
            return s.index, lines
    return None, []


def _positions(store: Path) -> dict[int, int]:
    """Cold step id → the transcript position it was folded from."""
    out: dict[int, int] = {}
    for f in (store / "cold_nodes").glob("step_*.json"):
        node = json.loads(f.read_bytes())
        pos = (node.get("source") or {}).get("position")
        if isinstance(pos, int):
            out[int(node["step_id"])] = pos
    return out


_STEP_ATTR = re.compile(r'<cold-step step="(\d+)"')


def run_probe_set(
    name: str, transcript: Path, probes: list[dict[str, Any]], work: Path,
    live: Path | None = None,
) -> list[dict[str, Any]]:
    """Fold ``transcript`` (the state at the compaction) with the pre-compact hook, then ask
    every phrasing of every probe through the prompt hook against ``live`` (the transcript the
    harness holds when the user asks: the cut plus its compaction, where there was one)."""
    repo = _repo(work / name)
    session_id = f"bench-{name}"
    _hook("pre-compact", {"session_id": session_id, "transcript_path": str(transcript),
                          "cwd": str(repo), "trigger": "auto", "hook_event_name": "PreCompact"},
          repo)  # fmt: skip
    if live is not None:  # the same file, grown by the compaction (as the harness has it)
        transcript.write_bytes(live.read_bytes())
    store = repo / ".contextfork" / "cold" / session_id
    pos = _positions(store)
    rows = []
    for p in probes:
        for kind, prompt in phrasings(p["term"]).items():
            out = _hook("user-prompt-submit", {
                "session_id": session_id, "transcript_path": str(transcript),
                "cwd": str(repo), "prompt": prompt, "hook_event_name": "UserPromptSubmit"},
                repo)  # fmt: skip
            ctx = (out.get("hookSpecificOutput") or {}).get("additionalContext", "") or ""
            seen = ctx + "\n" + _unescape(ctx)
            injected = {pos.get(int(m.group(1)), -1) for m in _STEP_ATTR.finditer(ctx)}
            rows.append({
                "set": name, "split": "tune" if name in TUNE_SETS else "heldout",
                "term": p["term"], "kind": kind, "origin": p["origin"],
                "recovered": p["term"] in seen,
                "evidence_step": p["origin"] in injected,
                "evidence_line": any(ln in seen for ln in p["lines"]),
                "steps": len(injected),
                "recall_top10": _recall_hit(store, prompt, p["origin"], pos),
                "tokens": _tokens(ctx) if ctx else 0,
                "chars": len(ctx),
            })  # fmt: skip
    return rows


def _recall_hit(store: Path, query: str, origin: int, pos: dict[int, int]) -> bool:
    """`fold recall`: is the origin step among the first 10 hits?"""
    from contextfork.cold import api

    hits = api.recall(query, limit=10, store_dir=store).data["hits"]
    return any(pos.get(int(h["step_id"])) == origin for h in hits)


def dev_probes(cut: Path) -> list[dict[str, Any]]:
    """The 16 recorded dev probes; origin and evidence lines by this script's rule."""
    from contextfork.transcript import load_session

    probes = json.loads(PROBES.read_text(encoding="utf-8"))
    steps = load_session(cut).steps
    out = []
    for p in probes:
        origin, lines = origin_of(steps, p["term"])
        if origin is not None:
            out.append({"term": p["term"], "origin": origin, "lines": lines})
    return out


# The probe rule (independent of contextfork.cold.identifiers and of the page-in's ranking):
# paths with a directory, CamelCase with two or more humps, snake_case with one or more
# underscores, dotted module paths; at least 8 characters.
_DERIVE_TERM = re.compile(
    r"(?<![\w/.-])(/?(?:[\w.-]+/)+[\w.-]+\.\w{1,6}|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){1,}"
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+){1,}|[a-z]\w+(?:\.[a-z_]\w+){2,})(?![\w-])"
)


def derive_probes(path: Path, limit: int = 12) -> tuple[list[dict[str, Any]], int]:
    """Probes for a session with no recorded compaction: a cut at the middle step; a probe is
    a term the agent used after the cut that a tool output carried before it and the agent
    never wrote before it (so only the folded tool output holds it)."""
    from contextfork.transcript import load_session
    from contextfork.transcript.model import TextBlock, ToolCall, ToolResult

    steps = load_session(path).steps
    cut = len(steps) // 2
    seen_in_output: set[str] = set()
    for s in steps[:cut]:
        for b in s.blocks:
            if isinstance(b, ToolResult):
                seen_in_output.update(m.group(1) for m in _DERIVE_TERM.finditer(b.content))
    said_before = " ".join(
        b.text if isinstance(b, TextBlock) else json.dumps(b.input, ensure_ascii=False)
        for s in steps[:cut] for b in s.blocks
        if (isinstance(b, TextBlock) and b.role == "assistant") or isinstance(b, ToolCall)
    )
    probes: list[dict[str, Any]] = []
    for s in steps[cut:]:
        for b in s.blocks:
            text = b.text if isinstance(b, TextBlock) and b.role == "assistant" else (
                json.dumps(b.input, ensure_ascii=False) if isinstance(b, ToolCall) else "")
            for m in _DERIVE_TERM.finditer(text):
                term = m.group(1)
                if (len(term) >= 8 and term in seen_in_output and term not in said_before
                        and not any(q["term"] == term for q in probes)):
                    origin, lines = origin_of(steps[:cut], term)
                    if origin is not None and lines:
                        probes.append({"term": term, "origin": origin, "lines": lines})
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


def _rate(sel: list[dict[str, Any]], key: str) -> float:
    return sum(bool(r[key]) for r in sel) / len(sel) if sel else 0.0


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per set and per phrasing: term, evidence step, evidence line, recall@10, tokens."""
    out = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], "all four phrasings" if r["kind"] in QUERY_KINDS
                           else "path: " + r["kind"]), []).append(r)  # fmt: skip
        groups.setdefault(("(every set)", r["kind"]), []).append(r)
    for (name, kind), sel in sorted(groups.items()):
        toks = sorted(r["tokens"] for r in sel)
        out.append({
            "set": name, "query": kind, "split": sel[0]["split"] if name != "(every set)" else "-",
            "rows": len(sel), "probes": len({r["term"] for r in sel}),
            "term_recovered": _rate(sel, "recovered"),
            "evidence_step": _rate(sel, "evidence_step"),
            "evidence_line": _rate(sel, "evidence_line"),
            "recall_top10": _rate(sel, "recall_top10"),
            "steps_mean": sum(r["steps"] for r in sel) / len(sel),
            "tokens_median": statistics.median(toks),
            "tokens_p90": toks[min(len(toks) - 1, int(0.9 * len(toks)))],
            "tokens_max": toks[-1],
        })  # fmt: skip
    return out


def sessions() -> list[Path]:
    return sorted((TRANSCRIPTS / "pi").glob("*.jsonl")) + sorted(
        (TRANSCRIPTS / "mini-swe-agent").glob("*.traj.json"))


def _set_name(path: Path) -> str:
    return path.name.split(".")[0]


def _live_claude(src: Path, at: int, dst: Path) -> None:
    """The transcript after the compaction: the cut, the boundary and the summary that
    follows it (what the harness holds when the user's next prompt arrives)."""
    raw = src.read_bytes().splitlines(keepends=True)
    end = next((i + 1 for i in range(at, min(len(raw), at + 4))
                if b'"isCompactSummary"' in raw[i]), at + 1)  # fmt: skip
    dst.write_bytes(b"".join(raw[:end]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("tune", "heldout", "all"), default="all",
                    help="the sets to run: tuning (dev + two mini-swe-agent runs), held-out, or all")
    ap.add_argument("--extra", action="store_true", help="(kept for old scripts: same as --split all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not PROBES.is_file():
        print(f"no probes at {PROBES} (../shared is absent)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    want = (lambda n: n in TUNE_SETS) if args.split == "tune" else (
        (lambda n: n not in TUNE_SETS) if args.split == "heldout" else (lambda n: True))
    with tempfile.TemporaryDirectory(prefix="cf-fidelity-") as tmp:
        work = Path(tmp)
        if want("dev"):
            src = TRANSCRIPTS / "claude-code" / json.loads(PROBES.read_text(encoding="utf-8"))[0]["session"]
            cut = work / "dev-cut.jsonl"
            at = _cut_claude(src, cut)
            live = work / "dev-live.jsonl"
            _live_claude(src, at, live)
            rows += run_probe_set("dev", cut, dev_probes(cut), work, live)
        for path in sessions():
            if not want(_set_name(path)):
                continue
            extra, at = derive_probes(path)
            if not extra:
                continue
            dst = work / f"{_set_name(path)}-cut{path.suffix}"
            _cut_steps(path, at, dst)
            rows += run_probe_set(_set_name(path), dst, extra, work)
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return 0
    print(f"turn budget {TURN_BUDGET} tokens; phrasings: {', '.join(PHRASINGS.values())}")
    print(f"{'set':<30} {'split':<8} {'query':<20} {'rows':>4} {'term':>5} {'step':>5} {'line':>5} "
          f"{'rec@10':>6} {'steps':>5} {'tok med':>7} {'p90':>5} {'max':>5}")
    for s in summary:
        print(f"{s['set'][:30]:<30} {s['split']:<8} {s['query'][:20]:<20} {s['rows']:>4} "
              f"{s['term_recovered']:>5.0%} {s['evidence_step']:>5.0%} {s['evidence_line']:>5.0%} "
              f"{s['recall_top10']:>6.0%} {s['steps_mean']:>5.1f} {s['tokens_median']:>7.0f} "
              f"{s['tokens_p90']:>5} {s['tokens_max']:>5}")
    print("term: the term is in what the prompt hook injected; step: a block of the step whose "
          "tool output (or file read) first carried the term; line: a line of that output holding "
          "the term and more; rec@10: `fold recall` has that step in its first 10 hits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
