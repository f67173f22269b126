"""Role slices benchmark (prints figures; not a test).

    python bench/slice_bench.py [--data DIR] [--every 5] [--horizon 15] [--budget 9000]
                                [--split tune|held-out|dev|fresh|cc-heldout|cc-legacy|all] [--fresh-dir DIR]
                                [--store none|real|all] [--no-task] [--misses ROLE]

Sessions, split by source (the first working-set rules were tuned on ``tune`` only and scored on
``held-out``; their revision was tuned on both, ``dev``, and scored once on ``fresh``):
- tune: the Claude Code dev sessions in DIR/transcripts/claude-code (one real 2.7 MB session
  with its recorded subagents, and the small ones);
- held-out: the pi session in DIR/transcripts/pi and the five mini-swe-agent trajectories in
  DIR/transcripts/mini-swe-agent (converted here to pi session lines, bash calls only). Its
  per-probe results were looked at while the working-set rules were revised: it is no longer
  held out. ``dev`` = tune + held-out: what the rules may be tuned on.
- fresh: 20 other mini-swe-agent trajectories, chosen by a fixed rule before the revision and
  extracted outside the repository by ``bench/slice_fresh_set.py`` (default
  ``~/.cache/contextfork-bench/heldout2``; absent: the split is skipped with one line). Scored
  only after the rules were fixed; ``--misses`` never prints its probes.
- cc-heldout: four other real Claude Code sessions of the same source, with five real Task calls
  and their recorded subagents, chosen by a fixed rule and extracted outside the repository by
  ``bench/slice_task_set.py`` (default ``~/.cache/contextfork-bench/task-heldout``).
  ``fresh`` and ``cc-heldout`` were scored once, then looked at: since then they are dev sets too.
- cc-legacy: the held-out set of the third revision, frozen before it: 15 real Claude Code
  sessions (1.0.80–1.0.90) of another user and project, with 59 real Task calls whose subagents
  were recorded inline (``isSidechain`` lines in the parent's own file), chosen by a fixed rule and
  extracted by ``bench/slice_legacy_set.py`` (default ``~/.cache/contextfork-bench/cc-legacy``);
  ``--misses`` and the per-spawn lines never show it.

The task, as the SubagentStart hook finds it: at a real spawn the parent's transcript is cut
just after the Agent/Task call's line, and the call is found in that prefix by the hook's own
``task_call`` (newest response's open agent call of this ``agent_type``); its prompt is the task.
``--no-task``: every slice keyed by role alone. The cold store: with ``--store real`` (default)
or ``all``, the parent's transcript up to the spawn point is folded with the project's own
``fold_session`` into a temporary repository (incrementally, spawn points in order, as a
session's store grows), and the slicer pages the task in from it and labels blocks with their
folded steps, as the hook does when the parent has a store; ``none``: no store.

At each spawn point:
- real spawns: the parent's Task/Agent calls whose subagent transcript is recorded
  (``<session>/subagents/agent-<id>.jsonl``, compaction agents skipped; without that folder, the
  inline sidechains of Claude Code before 2.0);
- pseudo spawns (synthetic): every ``--every`` tool calls of the parent, the next ``--horizon``
  tool calls of the parent itself stand in for a subagent handed the rest of the work.

Size: the slice of each role (o200k tokens) against (a) nothing and (b) the parent's whole live
context at that point (the recorded usage of its last response, else the o200k count of the
messages so far: what a fork subagent inherits). Relevance probes come from the subagent's
recorded calls by a rule that does not use the slicer's: a file the subagent Read that the
parent's calls before the spawn already named (any tool input), and a shell command it ran that
the parent had run (same text, blanks squeezed). A probe is "named" when the slice text names
the file (or holds the command). It is "held with content" when the slice also holds what the
subagent got back: at least min(3, n) of the n distinct lines of 12+ characters of the
subagent's own result of that call (a Read result without its line-number prefixes) occur in
the slice text (a result with no such line: named is enough). That rule reads only the
subagent's recorded output and the slice's text: nothing of the slicer's labels or sections.
The baseline "nothing" holds what the delegation prompt alone names (pseudo spawns: nothing).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contextfork.slice import roles as R  # noqa: E402
from contextfork.slice.build import cut  # noqa: E402
from contextfork.slice.live import read_live, task_call, task_text  # noqa: E402
from contextfork.slice.sources import Store  # noqa: E402
from contextfork.tokens import count_tokens  # noqa: E402

ROLES = sorted(R.BUILTIN_ROLES)
AGENT_CALLS = ("Task", "Agent")
_PI_NAMES = {"read": "Read", "bash": "Bash", "edit": "Edit", "write": "Write"}
_LINE_NO = re.compile(r"^\s*\d+(→|\t)")


def data_dir(given: str | None) -> Path:
    for cand in ([Path(given)] if given else []) + [ROOT.parent / "shared/data", ROOT.parent.parent / "shared/data"]:
        if (cand / "transcripts").is_dir():
            return cand
    sys.exit("no ../shared/data/transcripts here: pass --data DIR")


def _text(content: Any) -> str:
    if isinstance(content, str) or not isinstance(content, list):
        return content if isinstance(content, str) else ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


class Parsed:
    """The bench's own reading of a session (not the slicer's): calls with results, usage."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []  # name, input, result, end (offset after its result)
        self.usage: list[tuple[int, int]] = []  # (offset after the line, recorded context tokens)
        self.texts: list[tuple[int, str]] = []  # (offset after the line, message text) for the count


def parse(path: Path, sidechain: bool = False) -> Parsed:
    """Claude Code or pi lines (main chain; a subagent's file, ``sidechain``) → calls in order."""
    return parse_lines(path.read_bytes().splitlines(keepends=True), sidechain)


def parse_lines(lines: list[bytes], sidechain: bool = False) -> Parsed:
    out = Parsed()
    by_id: dict[str, dict[str, Any]] = {}
    said: list[str] = []  # words since the previous call (a user's prompt, the assistant's text)
    off = 0
    for raw in lines:
        off = end = off + len(raw)
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict) or bool(obj.get("isSidechain")) != sidechain:
            continue
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = msg.get("content")
        role = msg.get("role", obj.get("type"))
        out.texts.append((end, json.dumps(content, ensure_ascii=False)[:200_000]))
        u = msg.get("usage") or {}
        total = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens", "input", "cacheRead", "cacheWrite"))
        if role == "assistant" and total:
            out.usage.append((end, total))
        if role == "user" and isinstance(content, str) and not content.startswith("<"):
            said.append(content)
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str) and not b["text"].startswith("<"):
                said.append(b["text"])
            if b.get("type") in ("tool_use", "toolCall"):
                inp = dict(b.get("input") or b.get("arguments") or {})
                name = _PI_NAMES.get(str(b.get("name")), str(b.get("name")))
                if "path" in inp and "file_path" not in inp:
                    inp["file_path"] = inp["path"]
                call = {"name": name, "input": inp, "result": "", "end": end, "call_end": end,
                        "intent": "\n".join(said)[-2000:]}
                said = []
                out.calls.append(call)
                by_id[str(b.get("id"))] = call
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in by_id:
                hit = by_id[str(b.get("tool_use_id"))]
                hit["result"], hit["end"] = _text(b.get("content")), end
        if role == "toolResult" and str(msg.get("toolCallId")) in by_id:
            hit = by_id[str(msg.get("toolCallId"))]
            hit["result"], hit["end"] = _text(content), end
    return out


def miniswe_to_pi(traj: Path, dest: Path) -> None:
    """A mini-swe-agent trajectory as pi session lines: each reply's bash block is a ``bash``
    tool call, the next observation its result (the slicer reads pi sessions)."""
    msgs = json.loads(traj.read_bytes()).get("messages") or []
    lines = [{"type": "session", "id": traj.stem, "cwd": "/testbed"}]
    pending: str | None = None
    for i, m in enumerate(msgs):
        text = _text(m.get("content"))
        if m.get("role") == "assistant":
            cmd = re.findall(r"```bash\n(.*?)```", text, re.S)
            usage = ((m.get("extra") or {}).get("response") or {}).get("usage") or {}
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
            pending = None
            if cmd:
                pending = f"call{i}"
                blocks.append({"type": "toolCall", "id": pending, "name": "bash", "arguments": {"command": cmd[0].strip()}})
            lines.append({"type": "message", "message": {"role": "assistant", "content": blocks,
                                                         "usage": {"input": int(usage.get("prompt_tokens") or 0)}}})
        elif m.get("role") == "user" and pending is not None:
            lines.append({"type": "message", "message": {"role": "toolResult", "toolCallId": pending,
                                                         "content": [{"type": "text", "text": text}]}})
            pending = None
        elif m.get("role") == "user":
            lines.append({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
    dest.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")


def norm(cmd: str) -> str:
    return " ".join(cmd.split())


def probes(parent_calls: list[dict[str, Any]], sub_calls: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, value, the subagent's own result) of what it re-read or re-ran (not the slicer's rules)."""
    named = json.dumps([c.get("input") for c in parent_calls])
    ran = {norm(str(c["input"].get("command"))) for c in parent_calls if c.get("name") == "Bash"}
    out: dict[tuple[str, str], str] = {}
    for c in sub_calls:
        inp = c.get("input") if isinstance(c.get("input"), dict) else {}
        if c.get("name") == "Read" and isinstance(inp.get("file_path"), str) and json.dumps(inp["file_path"])[1:-1] in named:
            out.setdefault(("file", inp["file_path"]), c.get("result", ""))
        elif c.get("name") == "Bash" and isinstance(inp.get("command"), str) and norm(inp["command"]) in ran:
            out.setdefault(("command", norm(inp["command"])), c.get("result", ""))
    return [(k, v, r) for (k, v), r in out.items()]


def in_record(parent_calls: list[dict[str, Any]], probe: tuple[str, str, str]) -> bool:
    """Whether anything the parent's calls hold (inputs, results) holds the probe with its
    content: the most any slice of the parent's record could reach."""
    _kind, value, _ = probe
    every = "\n".join(f"{json.dumps(c.get('input'), ensure_ascii=False)}\n{c.get('result', '')}\n"
                      + "\n".join(str(v) for v in (c.get("input") or {}).values()) for c in parent_calls)
    return held(f"{value}\n{every}", probe)[1]


def content_lines(result: str) -> set[str]:
    return {s for s in (_LINE_NO.sub("", ln).strip() for ln in result.splitlines()) if len(s) >= 12}


def held(text: str, probe: tuple[str, str, str]) -> tuple[bool, bool]:
    """(named, held with content) by the bench's rule (module docstring)."""
    kind, value, result = probe
    named = value in norm(text) if kind == "command" else value in text
    want = content_lines(result)
    if not named:
        return False, False
    if not want:
        return True, True
    return True, sum(ln in text for ln in want) >= min(3, len(want))


def spawns(path: Path, parsed: Parsed, every: int, horizon: int, pseudo_task: str = "none") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    calls = parsed.calls
    sub_dir = path.with_suffix("") / "subagents"
    recorded = {}  # real spawns: the Task/Agent call whose recorded subagent has the same prompt
    if sub_dir.is_dir():
        for f in sorted(sub_dir.glob("agent-*.jsonl")):
            if "compact" in f.name:
                continue
            first = next((json.loads(x) for x in f.read_bytes().splitlines() if b'"type":"user"' in x.replace(b" ", b"")), {})
            prompt = (first.get("message") or {}).get("content")
            recorded[str(prompt)[:200]] = (f.name, parse(f, sidechain=True).calls)
    else:
        recorded.update(inline_sidechains(path))
    for k, c in enumerate(calls):
        if c["name"] in AGENT_CALLS:
            prompt = str(c["input"].get("prompt"))
            name, sub = recorded.get(prompt[:200], (None, []))
            # the cut: the Agent call's own line is written, its result is not
            out.append({"kind": "real", "cut": c["call_end"], "task": prompt,
                        "agent_type": c["input"].get("subagent_type"), "sub": name, "sub_calls": sub,
                        "parent_calls": calls[:k]})
    for k in range(every, len(calls) - horizon, every):
        # synthetic, for tuning only: the parent's words right before the "subagent's" first call
        intent = calls[k]["intent"] if pseudo_task == "intent" else ""
        out.append({"kind": "pseudo", "cut": calls[k - 1]["end"], "task": intent, "agent_type": None,
                    "sub": f"calls {k + 1}-{k + horizon}", "sub_calls": calls[k : k + horizon],
                    "parent_calls": calls[:k]})
    return out


def inline_sidechains(path: Path) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Claude Code before 2.0 kept a subagent's lines in the parent's file (``isSidechain``): a
    sidechain starts with a user line without ``parentUuid`` (the Task prompt) and goes on by
    ``parentUuid``. Prompt (first 200 characters) → (a name, the subagent's calls)."""
    chains: dict[str, list[bytes]] = {}
    root_of: dict[str, str] = {}
    for raw in path.read_bytes().splitlines(keepends=True):
        if b"isSidechain" not in raw:
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict) or not obj.get("isSidechain") or not isinstance(obj.get("uuid"), str):
            continue
        parent = obj.get("parentUuid")
        root = obj["uuid"] if parent is None else root_of.get(str(parent))
        if root is None:
            continue
        root_of[obj["uuid"]] = root
        chains.setdefault(root, []).append(raw)
    out: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for root, lines in chains.items():
        prompt = (json.loads(lines[0]).get("message") or {}).get("content")
        if isinstance(prompt, str):
            out.setdefault(prompt[:200], (f"sidechain {root[:8]}", parse_lines(lines, sidechain=True).calls))
    return out


def live_tokens(parsed: Parsed, cut_at: int) -> int:
    rec = [t for e, t in parsed.usage if e <= cut_at]
    if rec:
        return rec[-1]
    return count_tokens("\n".join(t for e, t in parsed.texts if e <= cut_at))


FRESH_DIR = Path.home() / ".cache/contextfork-bench/heldout2"
TASK_DIR = Path.home() / ".cache/contextfork-bench/task-heldout"
LEGACY_DIR = Path.home() / ".cache/contextfork-bench/cc-legacy"
HELD_OUT = ("cc-legacy",)  # never printed per probe (``--misses``) nor per spawn


def _as_pi(label: str, folder: Path, tmp: Path, prefix: str) -> list[tuple[str, Path]]:
    """Every mini-swe-agent trajectory in ``folder``, converted to a pi session in ``tmp``."""
    out: list[tuple[str, Path]] = []
    for traj in sorted(folder.glob("*.traj.json")):
        dest = tmp / f"{prefix}{traj.name.removesuffix('.traj.json')}.jsonl"
        miniswe_to_pi(traj, dest)
        out.append((label, dest))
    return out


def sessions(base: Path, split: str, tmp: Path, fresh: Path, task_dir: Path,
             legacy_dir: Path = LEGACY_DIR) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    if split in ("tune", "dev", "all"):
        out += [("tune", p) for p in sorted((base / "claude-code").glob("*.jsonl"))]
    if split in ("held-out", "dev", "all"):
        out += [("held-out", p) for p in sorted((base / "pi").glob("*.jsonl"))]
        out += _as_pi("held-out", base / "mini-swe-agent", tmp, "")
    if split in ("fresh", "all"):
        found_pi = _as_pi("fresh", fresh, tmp, "fresh-")
        if not found_pi:
            print(f"fresh: skipped (no *.traj.json in {fresh}: run bench/slice_fresh_set.py)")
        out += found_pi
    if split in ("cc-heldout", "all"):
        found = sorted(task_dir.glob("*.jsonl"))
        if not found:
            print(f"cc-heldout: skipped (no *.jsonl in {task_dir}: run bench/slice_task_set.py)")
        out += [("cc-heldout", p) for p in found]
    if split in ("cc-legacy", "all"):
        found = sorted(legacy_dir.glob("*.jsonl"))
        if not found:
            print(f"cc-legacy: skipped (no *.jsonl in {legacy_dir}: run bench/slice_legacy_set.py)")
        out += [("cc-legacy", p) for p in found]
    return out


def fold_prefix(repo: Path, session: str, prefix: Path) -> Store:
    """The parent's cold store at the spawn point: its transcript so far, folded with the
    project's own fold (keyed: the steps folded at an earlier spawn point stay as they are)."""
    from contextfork.cold import api as cold_api

    cold_api.fold_session(prefix, repo=repo, session=session)
    return Store(repo, session)


def _pct(xs: list[bool]) -> str:
    return f"{100 * sum(xs) / len(xs):5.1f}%" if xs else "   n/a"


def report(name: str, rows: dict[str, dict[str, list[Any]]], totals: dict[str, Any], budget: int) -> None:
    print(f"\n== {name}: {totals['spawns']} spawn points ({totals['real']} real Task/Agent calls, the rest pseudo) "
          f"in {totals['sessions']} sessions; probes: {totals['probes_file']} files re-read, "
          f"{totals['probes_cmd']} commands re-run; budget {budget} chars")
    print(f"(a) nothing (the delegation prompt alone): holds {totals['nothing'][0]}/{totals['nothing'][1]} probes")
    print("(b) the parent's whole live context holds every probe by name (the parent had them); with "
          f"content (the parent's record holds what the subagent got back): {totals['record']}/{totals['nothing'][1]} "
          "(a re-run command's output often changed): the most a slice can reach")
    print(f"{'role':<9} {'median tok':>10} {'max tok':>8} {'median % of live':>17} {'max %':>6} "
          f"{'files named':>12} {'w/ content':>11} {'cmds named':>11} {'w/ output':>10} {'all named':>10} {'all w/ content':>15}")
    for role in ROLES:
        r = rows[role]
        print(f"{role:<9} {statistics.median(r['tokens']):>10.0f} {max(r['tokens']):>8} "
              f"{100 * statistics.median(r['ratio']):>16.2f}% {100 * max(r['ratio']):>5.1f}% "
              f"{_pct(r['files']):>12} {_pct(r['files_c']):>11} {_pct(r['cmds']):>11} {_pct(r['cmds_c']):>10} "
              f"{_pct(r['files'] + r['cmds']):>10} {_pct(r['files_c'] + r['cmds_c']):>15}")
    print("label lines (chars, median per slice): " + ", ".join(
        f"{role} {statistics.median(rows[role]['labels']):.0f}" for role in ROLES if rows[role]["labels"]))
    print(f"real Task/Agent spawns only ({totals['real']}; task found by the hook's rule at "
          f"{totals['task_found']}, store at {totals['stored']}): probes {len(rows[ROLES[0]]['real_c'])}")
    for role in ROLES:
        r = rows[role]
        print(f"  {role:<9} named {_pct(r['real_n'])}  with content {_pct(r['real_c'])} "
              f"({sum(r['real_c'])}/{len(r['real_c'])})  task blocks shown {sum(r['task_blocks'])}")
    hooked, kinds = totals["hooked"], ", ".join(f"{k} {v}" for k, v in sorted(totals["hooked_roles"].items()))
    print(f"  each as hooked (its agent_type's role: {kinds}): with content {_pct(hooked)} ({sum(hooked)}/{len(hooked)})")


def task_and_store(args: argparse.Namespace, sp: dict[str, Any], view: Any, repo: Path, session: str,
                   prefix: Path, totals: dict[str, Any]) -> tuple[str, Store | None]:
    """The spawn's task (a real one: found by the hook's own rule in the prefix) and the parent's
    cold store folded up to the spawn point (module docstring)."""
    task = ""
    if sp["kind"] == "real" and not args.no_task:
        task = task_text(task_call(view, sp["agent_type"] or "general-purpose")[0])
        totals["task_found"] += bool(task)
    elif not args.no_task:
        task = sp["task"]
    store = None
    if args.store == "all" or (args.store == "real" and sp["kind"] == "real"):
        if not repo.is_dir():
            repo.mkdir()
            subprocess.run(["git", "init", "-q", str(repo)], check=True)
        store = fold_prefix(repo, session, prefix)
        totals["stored"] += store.ok
    return task, store


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=15)
    ap.add_argument("--budget", type=int, default=R.DEFAULT_BUDGET)
    ap.add_argument("--split", choices=("tune", "held-out", "dev", "fresh", "cc-heldout", "cc-legacy", "all"), default="dev")
    ap.add_argument("--fresh-dir", default=str(FRESH_DIR))
    ap.add_argument("--task-dir", default=str(TASK_DIR))
    ap.add_argument("--legacy-dir", default=str(LEGACY_DIR))
    ap.add_argument("--store", choices=("none", "real", "all"), default="real",
                    help="fold the parent up to the spawn point into a cold store (real spawns, all, none)")
    ap.add_argument("--no-task", action="store_true", help="key every slice by role alone")
    ap.add_argument("--pseudo-task", choices=("none", "intent"), default="none",
                    help="intent: a pseudo spawn's task is the parent's words before the next call (synthetic)")
    ap.add_argument("--quiet", action="store_true", help="only the tables")
    ap.add_argument("--misses", metavar="ROLE", help="print each dev probe ROLE's slice misses (never fresh)")
    args = ap.parse_args()
    base = data_dir(args.data) / "transcripts"
    groups: dict[str, tuple[dict[str, dict[str, list[Any]]], dict[str, Any]]] = {}
    ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for group, path in sessions(base, args.split, tmp, Path(args.fresh_dir).expanduser(),
                                    Path(args.task_dir).expanduser(), Path(args.legacy_dir).expanduser()):
            rows, totals = groups.setdefault(group, (
                {r: {k: [] for k in ("ratio", "tokens", "files", "files_c", "cmds", "cmds_c", "real_n", "real_c",
                                     "task_blocks", "labels")} for r in ROLES},
                {"spawns": 0, "real": 0, "hooked": [], "hooked_roles": {}, "probes_file": 0, "probes_cmd": 0, "nothing": [0, 0], "sessions": 0,
                 "record": 0, "task_found": 0, "stored": 0}))
            totals["sessions"] += 1
            parsed = parse(path)
            raw = path.read_bytes()
            repo = tmp / f"repo-{group}-{path.stem}"
            session = path.stem
            for sp in sorted(spawns(path, parsed, args.every, args.horizon, args.pseudo_task), key=lambda x: x["cut"]):
                prefix = tmp / f"parent{path.suffix}"
                prefix.write_bytes(raw[: sp["cut"]])
                view = read_live(prefix)
                task, store = task_and_store(args, sp, view, repo, session, prefix, totals)
                live = live_tokens(parsed, sp["cut"])
                ps = probes(sp["parent_calls"], sp["sub_calls"])
                totals["spawns"] += 1
                totals["real"] += sp["kind"] == "real"
                if sp["kind"] == "real":
                    kind = R.role_for(sp["agent_type"], {})
                    totals["hooked_roles"][kind] = totals["hooked_roles"].get(kind, 0) + 1
                nf = sum(k == "file" for k, _, _ in ps)
                totals["probes_file"] += nf
                totals["probes_cmd"] += len(ps) - nf
                totals["nothing"][0] += sum(v in sp["task"] for _, v, _ in ps)
                totals["nothing"][1] += len(ps)
                totals["record"] += sum(in_record(sp["parent_calls"], p) for p in ps)
                line = [f"{group:<8} {path.name[:14]:<14} {sp['kind']} {sp['sub']!s:<22} live {live:>7} tok  probes {nf}f/{len(ps) - nf}c"]
                for role in ROLES:
                    spec = R.resolve(role, {}, args.budget)
                    assert spec is not None
                    t0 = time.perf_counter()
                    out = cut(view, store, None, spec, agent_type=sp["agent_type"],
                              session=session if store is not None else None, task=task)
                    ms.append((time.perf_counter() - t0) * 1000)
                    assert len(out["text"]) <= args.budget
                    tok = count_tokens(out["text"]) if out["text"] else 0
                    row = rows[role]
                    row["tokens"].append(tok)
                    if live:
                        row["ratio"].append(tok / live)
                    for p in ps:
                        named, with_content = held(out["text"], p)
                        row["files" if p[0] == "file" else "cmds"].append(named)
                        row["files_c" if p[0] == "file" else "cmds_c"].append(with_content)
                        if sp["kind"] == "real":
                            row["real_n"].append(named)
                            row["real_c"].append(with_content)
                            if role == R.role_for(sp["agent_type"], {}):  # the role the hook gives it
                                totals["hooked"].append(with_content)
                        if role == args.misses and group not in HELD_OUT and not with_content:
                            rec = "in record" if in_record(sp["parent_calls"], p) else "not in record"
                            print(f"MISS {group} {path.name[:20]} {sp['sub']} {p[0]} named={named} {rec}: {p[1][:150]}")
                    line.append(f"{role[:4]} {tok:>5}")
                    row["task_blocks"].append(sum(b["section"] == "task" for b in out["blocks"]))
                    if out["text"]:  # what the blocks' label lines cost: "[label]\n"
                        row["labels"].append(sum(len(b["label"]) + 3 for b in out["blocks"]))
                if not args.quiet and group not in HELD_OUT:
                    print("  ".join(line))
    for name in ("tune", "held-out", "fresh", "cc-heldout", "cc-legacy"):
        if name in groups:
            report(name, *groups[name], args.budget)
    if not ms:
        return 0
    print(f"\nslice cut time (in-process, live view read once per spawn): median "
          f"{statistics.median(ms):.1f} ms, max {max(ms):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
