"""The six handoff parts of a package as the inspector words them: sentences, not a key dump.

``handoff.json`` keeps ``[[unfilled: ...]]`` placeholders for ``validate``; a reader sees a part
that nobody wrote as *missing* (``None`` here, styled by the page), never as content. The file
comes from a package that may be invalid or hand-edited, so every field is read defensively:
a wrong type reads as missing, it never breaks the build of the site.
"""

from __future__ import annotations

from typing import Any

from contextfork.jinjafilters import barred, is_recorded, step_suffix


def _text(value: Any) -> str | None:
    """A filled-in string, or None (absent, empty, not a string, or a placeholder)."""
    if not isinstance(value, str) or not value.strip() or not is_recorded(value):
        return None
    return value.strip()


def _texts(value: Any) -> list[str]:
    return [t for v in value if (t := _text(v))] if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _evidence(items: Any, where: str, checked: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, e in enumerate(_dicts(items)):
        ref = _text(e.get("ref"))
        if ref is None:
            continue
        claim = _obj(checked.get(f"{where}/{i}"))
        out.append({"kind": str(e.get("kind") or "note"), "ref": ref, "note": _text(e.get("note")),
                    "status": claim.get("status"), "detail": claim.get("detail")})  # fmt: skip
    return out


def prose(handoff: Any, checked: dict[str, Any]) -> dict[str, Any]:
    """Each part reduced to what was really written; an empty value means *missing*."""
    h = _obj(handoff)
    goal = _obj(h.get("active_goal"))
    decisions = []
    for i, d in enumerate(_dicts(h.get("settled_decisions"))):
        if (text := _text(d.get("decision"))) is not None:
            decisions.append({
                "decision": text, "rationale": _text(d.get("rationale")),
                "tradeoffs": _text(d.get("tradeoffs")),
                "rejected": _texts(d.get("rejected_alternatives")),
                "evidence": _evidence(d.get("evidence"), f"/settled_decisions/{i}/evidence", checked),
            })  # fmt: skip
    failures = []
    for i, f in enumerate(_dicts(h.get("failed_approaches"))):
        if (text := _text(f.get("approach"))) is not None:
            action = _text(f.get("barred_action"))
            failures.append({
                "approach": text + step_suffix(f), "barred": barred(action) if action else None,
                "error": _text(f.get("error_excerpt")), "seeded": f.get("machine_seeded") is True,
                "evidence": _evidence(f.get("evidence"), f"/failed_approaches/{i}/evidence", checked),
            })  # fmt: skip
    risks = [{"risk": t, "mitigation": _text(r.get("mitigation"))}
             for r in _dicts(h.get("open_risks")) if (t := _text(r.get("risk")))]  # fmt: skip
    tree = _obj(h.get("working_tree_state"))
    nxt = _obj(h.get("next_action"))
    return {
        "goal": _text(goal.get("goal")),
        "goal_seeded": goal.get("machine_seeded") is True,
        "scope": _texts(goal.get("scope")),
        "criteria": _texts(goal.get("acceptance_criteria")),
        "candidates": _texts(goal.get("candidates")),
        "decisions": decisions,
        "branch": _text(tree.get("branch")),
        "head": _text(tree.get("head")),
        "tree_summary": _text(tree.get("summary")),
        "touched": _texts(h.get("touched_files")),
        "failures": failures,
        "risks": risks,
        "next": _text(nxt.get("action")),
        "command": _text(nxt.get("command")),
    }
