"""``handoff_summary.md`` without jinja2: the text ``templates/handoff_summary.md.j2`` renders.

Every export writes this file, the pre-commit checkpoint's included, and importing jinja2 and
loading the template cost about 25 ms of CPU per export, a fifth of a cold checkpoint's Python
time (issue 27). The template stays the specification: ``tests/package/test_handoff_md.py``
renders both on many handoffs (every part filled, empty, seeded, cited, odd text) and requires
the same bytes, so a change to one fails until the other says the same. Standard library only.
"""

from __future__ import annotations

from contextfork.jinjafilters import barred, claim_mark, names_step, provenance, recorded

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

_PREAMBLE = (
    "> IPSF-1.2 handoff. Parts marked *not recorded* were neither written by the model nor found in\n"
    "> the harness's own summary; items marked *(machine-seeded)* were derived from the transcript and\n"
    "> git — confirm them. Cited evidence is checked by the machine (verified / unverified).\n"
)


def _truncate(s: str, length: int = 240, end: str = "...", leeway: int = 5) -> str:
    """jinja2's ``truncate`` filter (``killwords=False``, its default leeway of 5)."""
    if len(s) <= length + leeway:
        return s
    return s[: length - len(end)].rsplit(" ", 1)[0] + end


def _heading(title: str, parts: dict[str, Any], part: str) -> str:
    prov = parts.get(part)
    return f"{title} *({provenance(prov)})*\n" if prov else f"{title}\n"


def _evidence(out: list[str], items: list[dict[str, Any]], where: str, checked: dict[str, Any]) -> None:
    for i, e in enumerate(items):
        note = f" — {e['note']}" if e["note"] else ""
        out.append(f"  - Evidence ({e['kind']}): `{e['ref']}`{note}"
                   f"{claim_mark(checked.get(f'{where}/{i}'))}\n\n")  # fmt: skip


def _goal(out: list[str], g: dict[str, Any]) -> None:
    seeded = " *(machine-seeded candidates below)*" if g["machine_seeded"] else ""
    out.append(f"{recorded(g['goal'])}{seeded}\n")
    if g["scope"]:
        out.append("**Scope**\n")
        out += [f"- {s}\n" for s in g["scope"]]
    out.append("**Acceptance criteria**\n")
    out += [f"- {recorded(c)}\n" for c in g["acceptance_criteria"]] or ["- (none stated)\n"]
    if g["candidates"]:
        out.append("\n**Goal candidates** *(machine-seeded)*\n")
        out += [f"- {c}\n" for c in g["candidates"]]


def _decisions(out: list[str], decisions: list[dict[str, Any]], checked: dict[str, Any]) -> None:
    for di, d in enumerate(decisions):
        why = f" — {d['rationale']}" if d["rationale"] else ""
        out.append(f"- **{recorded(d['decision'])}**{why}\n")
        if d["tradeoffs"]:
            out.append(f"  - Tradeoffs: {d['tradeoffs']}\n")
        out += [f"  - Rejected: {r}\n" for r in d["rejected_alternatives"]]
        _evidence(out, d["evidence"], f"/settled_decisions/{di}/evidence", checked)
    if not decisions:
        out.append("- (none recorded)\n")


def _tree(out: list[str], h: dict[str, Any]) -> None:
    w = h["working_tree_state"]
    out.append("\n## 3. Working Tree State *(machine-filled from git)*\n"
               f"- Branch: {w['branch'] if w['branch'] else '(detached HEAD)'}\n"
               f"- HEAD: `{w['head'] if w['head'] else '(unborn: no commits yet)'}`\n"
               f"- Working tree: `{w['worktree_tree_sha']}`\n"
               f"- {w['summary']}\n")  # fmt: skip
    if h["touched_files"]:
        out.append(f"- Files touched in the session: {', '.join(f'`{f}`' for f in h['touched_files'])}\n")


def _failures(out: list[str], failures: list[dict[str, Any]], checked: dict[str, Any]) -> None:
    for fi, f in enumerate(failures):
        line = f"- **{f['approach']}**"
        if f["machine_seeded"]:
            line += " *(machine-seeded)*"
        if f["step"] and not names_step(f):
            line += f" — step {f['step']}{claim_mark(checked.get(f'/failed_approaches/{fi}/step'))}"
        out.append(f"{line}\n  - Barred action: **do not** {barred(f['barred_action'])}\n")
        if f["error_excerpt"]:
            excerpt = str(f["error_excerpt"]).replace("`", "'").replace("\n", " ")
            out.append(f"  - Error: `{_truncate(excerpt)}`\n")
        _evidence(out, f["evidence"], f"/failed_approaches/{fi}/evidence", checked)
    if not failures:
        out.append("- (no failed approaches recorded)\n")


def render(h: dict[str, Any], package_id: str, parts: dict[str, Any], checked: dict[str, Any]) -> str:
    """The summary of handoff ``h`` (``parts``: each part's provenance; ``checked``: each
    cited claim's check by JSON pointer), byte for byte the template's output."""
    out = [f"# Session handoff — package {package_id}\n\n", _PREAMBLE, "\n",
           _heading("## 1. Active Goal & Scope", parts, "active_goal")]  # fmt: skip
    _goal(out, h["active_goal"])
    out.append("\n" + _heading("## 2. Settled Decisions, Tradeoffs & Evidence", parts, "settled_decisions"))
    _decisions(out, h["settled_decisions"], checked)
    _tree(out, h)
    out.append("\n## 4. Failed Approaches & Known Pitfalls (anti-loop shield)\n")
    _failures(out, h["failed_approaches"], checked)
    out.append("\n" + _heading("## 5. Open Risks", parts, "open_risks"))
    for r in h["open_risks"]:
        mitigation = f" — mitigation: {r['mitigation']}" if r["mitigation"] else ""
        out.append(f"- {recorded(r['risk'])}{mitigation}\n")
    if not h["open_risks"]:
        out.append("- (none recorded)\n")
    out.append("\n" + _heading("## 6. Immediate Next Action", parts, "next_action"))
    out.append(f"{recorded(h['next_action']['action'])}\n")
    if h["next_action"]["command"]:
        out.append(f"\n```\n{h['next_action']['command']}\n```\n")
    return "".join(out)
