"""With no model in the loop, the handoff's judgement parts come from the harness's own summary.

When a harness compacts, its model writes a summary of the work (Claude Code: numbered
sections "1. Primary Request and Intent:" … "9. Optional Next Step:"; pi: markdown headings
"## Goal", "## Key Decisions", "## Next Steps"; Codex: its handoff summary). That is the model's
own account, and it used to be thrown away. The last such summary in the transcript is cut into
the handoff's parts by section title, each part recorded with where it came from (harness, step,
section, the summary's sha256). A part no section answers stays unrecorded: the brief then says
"not recorded", never a placeholder. Deterministic: same transcript, same parts.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from contextfork.transcript.model import Session, TextBlock

_CC_START = "This session is being continued from a previous conversation"
_MIN_SUMMARY = 80
_CAP = 700  # characters per harvested item
_MAX_ITEMS = 8
# Claude Code: "1. Primary Request and Intent:"; markdown: "## Goal", "### Blocked", "**Goal**:"
_TITLE = re.compile(
    r"^\s*(?:\d+\.\s+([A-Z][^:\n]{2,60}):\s*$|#{1,4}\s+(.{2,60}?)\s*:?\s*$|\*\*([^*\n]{2,60})\*\*:?\s*$)",
    re.MULTILINE,
)
# section title keywords → handoff part (first match wins, in this order)
_ROUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("next_action", ("next step", "next action", "next steps")),
    ("open_risks", ("pending", "blocked", "risk", "open question", "todo", "remaining")),
    ("active_goal", ("primary request", "intent", "goal", "objective", "task")),
    ("settled_decisions", ("decision", "errors and fixes", "problem solving", "constraint")),
    ("scope", ("current work", "in progress")),
)


def _cap(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CAP else text[: _CAP - 1] + "…"


def _items(body: str) -> list[str]:
    """Bullets of a section (``-``, ``*``, ``1.``), else its paragraphs."""
    bullets = re.findall(r"^\s{0,6}(?:[-*•]|\d+\.)\s+(.+(?:\n(?!\s{0,6}(?:[-*•]|\d+\.)\s).+)*)",
                         body, re.MULTILINE)  # fmt: skip
    found = bullets or [p for p in re.split(r"\n\s*\n", body) if p.strip()]
    out = [_cap(x.replace("**", "")) for x in found if x.strip()]
    return [x for x in out if x][:_MAX_ITEMS]


def find_summary(session: Session) -> tuple[int, str] | None:
    """(step index, text) of the last compaction summary the harness wrote into the transcript."""
    starts = {c.before_step for c in session.compactions}
    found: tuple[int, str] | None = None
    for step in session.steps:
        texts = [b for b in step.blocks if isinstance(b, TextBlock) and b.role == "user"
                 and len(b.text) >= _MIN_SUMMARY]  # fmt: skip
        # The summary opens its step; what the harness writes after it in the same step (Claude
        # Code 2.1: the /compact command's caveat, name and stdout) is not the summary.
        pick = next((b for b in texts if b.text.lstrip().startswith(_CC_START)), None) or (
            next((b for b in texts if b.meta), None) if step.index in starts else None)
        if pick is not None:
            found = (step.index, pick.text)
    return found


def _sections(text: str) -> list[tuple[str, str]]:
    body = text.split("\nSummary:", 1)[1] if "\nSummary:" in text else text  # CC: skip Analysis
    marks = list(_TITLE.finditer(body))
    out = []
    for i, m in enumerate(marks):
        title = next(g for g in m.groups() if g)
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        out.append((title.strip(), body[m.end() : end].strip()))
    return out


def _route(title: str) -> str | None:
    low = title.lower()
    for part, words in _ROUTES:
        if any(w in low for w in words):
            return part
    return None


def harvest(session: Session) -> dict[str, Any] | None:
    """``{"parts": {...handoff input...}, "provenance": {part: {...}}}`` or None (no summary)."""
    found = find_summary(session)
    if found is None:
        return None
    index, text = found
    origin = {"source": "harness-summary", "harness": session.format, "step": index,
              "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}  # fmt: skip
    parts: dict[str, Any] = {}
    prov: dict[str, Any] = {}
    goal: dict[str, Any] = {"scope": [], "acceptance_criteria": []}
    for title, body in _sections(text):
        part = _route(title)
        items = _items(body)
        if part is None or not items:
            continue
        if part == "active_goal" and "goal" not in goal:
            goal["goal"] = items[0] if len(items) == 1 else _cap(body)
        elif part == "scope":
            goal["scope"] += items
        elif part == "next_action" and "next_action" not in parts:
            parts["next_action"] = {"action": items[0], "command": None}
        elif part == "open_risks":
            parts.setdefault("open_risks", []).extend(
                {"risk": f"{title}: {x}", "mitigation": None} for x in items)  # fmt: skip
        elif part == "settled_decisions":
            parts.setdefault("settled_decisions", []).extend(
                {"decision": x, "rationale": f"from the summary's \"{title}\"", "tradeoffs": None,
                 "rejected_alternatives": [], "evidence": []} for x in items)  # fmt: skip
        else:
            continue
        key = "active_goal" if part in ("active_goal", "scope") else part
        prov.setdefault(key, {**origin, "sections": []})["sections"].append(title)
    if "goal" in goal:
        parts["active_goal"] = {**goal, "candidates": [], "machine_seeded": False}
    elif goal["scope"]:
        prov.pop("active_goal", None)
    if not parts:  # a summary without sections (Codex): its opening, as the goal
        first = next((p for p in re.split(r"\n\s*\n", text) if p.strip()), "")
        if not first:
            return None
        parts["active_goal"] = {"goal": _cap(first), "scope": [], "acceptance_criteria": [],
                                "candidates": [], "machine_seeded": False}  # fmt: skip
        prov["active_goal"] = {**origin, "sections": ["(opening paragraph)"]}
    for k in parts:
        prov[k]["parts_trimmed_to"] = _CAP
    return {"parts": parts, "provenance": prov}
