"""``export --transcript auto``: the session that did the work in this repository, and why.

The newest transcript of the project folder is often not the one that matters: a two-line
"hello" started after the real session is newer, and taking it loses the do-not-retry list of
the session that did the work. Each recent Claude Code transcript of the repository is read
once (line by line, stdlib JSON) for what it did here: edits to files under the repository,
tool calls, failed tool results, prompts. Sessions with no tool call are trivial and skipped;
of the rest, the newest that edited files in this repository wins, else the newest with tool calls.
Two sessions that both edited this repository and were active within minutes of each other are
near-equals: the export refuses to choose and lists both, so nothing is lost silently.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfork.errors import NotFoundError, UsageError

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"})
MAX_CANDIDATES = 12  # the most recent transcripts looked at
NEAR_SECONDS = 10 * 60  # two working sessions active this close together: ask, do not guess


@dataclass
class Candidate:
    path: Path
    mtime_ns: int
    prompts: int = 0
    tool_calls: int = 0
    edits: int = 0  # edit tool calls on files inside the repository
    failed: int = 0
    files: set[str] = field(default_factory=set)

    @property
    def trivial(self) -> bool:
        return self.tool_calls == 0

    def rank(self) -> tuple[bool, int]:
        return (self.edits > 0, self.mtime_ns)

    def describe(self) -> str:
        return (
            f"{self.path.name}: {self.prompts} prompt(s), {self.tool_calls} tool call(s), "
            f"{self.edits} edit(s) in this repository, {self.failed} failed"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path), "session_id": self.path.stem, "prompts": self.prompts,
            "tool_calls": self.tool_calls, "edits_in_repo": self.edits, "failed": self.failed,
        }  # fmt: skip


@dataclass
class Choice:
    chosen: Candidate
    why: str
    skipped: list[Candidate]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.chosen.to_json(),
            "why": self.why,
            "skipped": [{**c.to_json(), "trivial": c.trivial} for c in self.skipped],
        }


def _inside(path: str, root: str) -> bool:
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))
    return full == root or full.startswith(root + os.sep)


def _tally(c: Candidate, obj: dict[str, Any], root: str) -> None:
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return
    content = msg.get("content")
    kind = obj.get("type")
    typed = isinstance(content, str) or (
        isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "text" for b in content)
    )
    if kind == "user" and typed and not obj.get("isMeta") and not obj.get("isCompactSummary"):
        c.prompts += 1
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            c.tool_calls += 1
            args = block.get("input")
            target = args.get("file_path") or args.get("notebook_path") if isinstance(args, dict) else None
            if block.get("name") in EDIT_TOOLS and isinstance(target, str) and _inside(target, root):
                c.edits += 1
                c.files.add(target)
        elif block.get("type") == "tool_result" and block.get("is_error"):
            c.failed += 1


def survey(path: Path, root: Path) -> Candidate:
    """What one transcript did in ``root`` (unreadable lines are skipped, like every reader)."""
    c = Candidate(path, path.stat().st_mtime_ns)
    real = os.path.realpath(root)
    with open(path, "rb") as fh:
        for raw in fh:
            if b'"tool_use"' not in raw and b'"user"' not in raw:
                continue  # most lines (assistant text, system) cannot change the tally
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and not obj.get("isSidechain"):
                _tally(c, obj, real)
    return c


def choose(root: Path) -> Choice:
    """The transcript ``--transcript auto`` means for ``root``; refuses near-equals."""
    from contextfork.transcript.locate import project_dir

    folder = project_dir(root)
    try:
        files = [p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        files = []
    if not files:
        raise NotFoundError(f"no Claude Code transcript for {root} (looked in {folder})",
                            hint="pass --transcript PATH")  # fmt: skip
    files.sort(key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)
    cands = [survey(p, root) for p in files[:MAX_CANDIDATES]]
    working = sorted((c for c in cands if not c.trivial), key=Candidate.rank, reverse=True)
    if not working:
        newest = cands[0]
        return Choice(newest, "the newest session; no session of this repository made a tool "
                      "call, so none did more work than another", cands[1:])  # fmt: skip
    best = working[0]
    rival = next((c for c in working[1:] if c.edits and best.edits), None)
    if rival is not None and abs(rival.mtime_ns - best.mtime_ns) < NEAR_SECONDS * 10**9:
        raise UsageError(
            "two sessions worked in this repository at about the same time; choose one with "
            f"--transcript PATH: {best.path} ({best.describe()}) or {rival.path} "
            f"({rival.describe()})"
        )
    newest = cands[0]
    if best is newest:
        why = "the newest session, and it did work here"
    else:
        passed = [c for c in cands if c.mtime_ns > best.mtime_ns]
        what = ("trivial (no tool call)" if all(c.trivial for c in passed)
                else "no edit in this repository")  # fmt: skip
        why = (f"the newest session that did work in this repository; {len(passed)} newer "
               f"session(s) skipped: {what}")  # fmt: skip
    return Choice(best, why, [c for c in cands if c is not best])


def codex_rollouts(root: Path, limit: int = 5) -> list[Path]:
    """The newest Codex rollouts whose session ran in ``root`` (``session_meta.cwd``), newest
    first; only the most recent day folders are looked at."""
    home = os.environ.get("CODEX_HOME")
    base = (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"
    real = os.path.realpath(root)
    try:
        days = sorted((d for d in base.glob("*/*/*") if d.is_dir()), reverse=True)[:7]
    except OSError:
        return []
    files = sorted((f for d in days for f in d.glob("rollout-*.jsonl")),
                   key=lambda p: p.stat().st_mtime_ns, reverse=True)  # fmt: skip
    out: list[Path] = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                first = json.loads(fh.readline() or b"{}")
        except (OSError, ValueError):
            continue
        payload = first.get("payload") if isinstance(first, dict) else None
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if isinstance(cwd, str) and os.path.realpath(cwd) == real:
            out.append(f)
            if len(out) >= limit:
                break
    return out


def pi_sessions(root: Path, limit: int = 5) -> list[Path]:
    """The newest pi sessions whose header names ``root`` as their cwd, newest first."""
    env = os.environ.get("PI_CODING_AGENT_DIR")
    base = (Path(env).expanduser() if env else Path.home() / ".pi" / "agent") / "sessions"
    real = os.path.realpath(root)
    try:
        files = sorted(base.glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    except OSError:
        return []
    out: list[Path] = []
    for f in files[:50]:
        try:
            with open(f, "rb") as fh:
                head = json.loads(fh.readline() or b"{}")
        except (OSError, ValueError):
            continue
        cwd = head.get("cwd") if isinstance(head, dict) and head.get("type") == "session" else None
        if isinstance(cwd, str) and os.path.realpath(cwd) == real:
            out.append(f)
            if len(out) >= limit:
                break
    return out


def candidates(root: Path) -> list[Path]:
    """Sessions a model-written handoff may cite, best first: the Claude Code session that did
    the work here (``choose``, when it is clear), then this repository's newest Codex rollouts
    and pi sessions."""
    out: list[Path] = []
    with contextlib.suppress(NotFoundError, UsageError):
        out.append(choose(root).chosen.path)
    return out + codex_rollouts(root) + pi_sessions(root)
