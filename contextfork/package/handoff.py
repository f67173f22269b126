"""The 6-part handoff (IPSF-1.2): machine seeding, merging, rendering, placeholders.

Parts the machine cannot know stay explicit ``[[unfilled: ...]]`` placeholders so ``validate``
can report them; machine-seeded content is marked so an agent confirms or corrects it.

This module works on plain dicts and imports neither pydantic nor jinja2 at import time: it
runs inside git's pre-commit hook. The format is defined by the pydantic models in
``package.models`` (``Handoff``, ``HandoffInput``); tests check this module's output against
them and against ``schemas/session-handoff.schema.json``.
"""

from __future__ import annotations

import copy
import re

from contextfork.package import handoff_md

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any

HANDOFF_VERSION = "1.2"
PLACEHOLDER_RE = re.compile(r"\[\[unfilled:[^\]]*\]\]")
PARTS = ("active_goal", "settled_decisions", "failed_approaches", "open_risks", "next_action")


def placeholder(what: str) -> str:
    return f"[[unfilled: {what}]]"


def default_goal() -> dict[str, Any]:
    return {
        "goal": placeholder("the active goal, in one sentence"),
        "scope": [],
        "acceptance_criteria": [placeholder("how we know it is done")],
        "candidates": [],
        "machine_seeded": False,
    }


def _decision(text: str) -> dict[str, Any]:
    return {
        "decision": text,
        "rationale": None,
        "tradeoffs": None,
        "rejected_alternatives": [],
        "evidence": [],
    }


def evidence(kind: str, ref: str, note: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "ref": ref, "note": note}


def _norm_failure(f: dict[str, Any], seeded: bool) -> dict[str, Any]:
    out = {**failed_approach("", ""), **f}
    out["evidence"] = [evidence(**{"note": None, **e}) for e in out["evidence"]]
    if seeded:
        out["machine_seeded"] = True
    return out


def failed_approach(
    approach: str,
    barred_action: str,
    *,
    error_excerpt: str | None = None,
    step: int | None = None,
    evidence: list[dict[str, Any]] | None = None,
    machine_seeded: bool = False,
) -> dict[str, Any]:
    return {
        "approach": approach,
        "barred_action": barred_action,
        "error_excerpt": error_excerpt,
        "step": step,
        "evidence": evidence or [],
        "machine_seeded": machine_seeded,
    }




def build(
    tree: dict[str, Any],
    given: dict[str, Any] | None = None,
    *,
    goal: str | None = None,
    seeded_failures: list[dict[str, Any]] | None = None,
    goal_candidates: list[str] | None = None,
    touched_files: list[str] | None = None,
) -> dict[str, Any]:
    """Merge agent-supplied parts over machine seeds; unknown parts stay placeholders."""
    h: dict[str, Any] = {
        "handoff_version": HANDOFF_VERSION,
        "active_goal": default_goal(),
        "settled_decisions": [_decision(placeholder("decisions settled so far"))],
        "working_tree_state": tree,
        "failed_approaches": [_norm_failure(f, True) for f in seeded_failures or []],
        "open_risks": [{"risk": placeholder("open risks"), "mitigation": None}],
        "next_action": {
            "action": placeholder("the single next action for the new session"),
            "command": None,
        },
        "touched_files": sorted(touched_files or []),
    }
    if goal_candidates:
        h["active_goal"]["candidates"] = list(goal_candidates)
        h["active_goal"]["machine_seeded"] = True
    given = copy.deepcopy(given or {})
    if given.get("active_goal") is not None:
        h["active_goal"] = {**default_goal(), **given["active_goal"]}
    if given.get("settled_decisions") is not None:
        h["settled_decisions"] = [{**_decision(""), **d} for d in given["settled_decisions"]]
    if given.get("failed_approaches") is not None:
        agent = [_norm_failure(f, False) for f in given["failed_approaches"]]
        h["failed_approaches"] = agent + [f for f in h["failed_approaches"] if f["machine_seeded"]]
    if given.get("open_risks") is not None:
        h["open_risks"] = [{"mitigation": None, **r} for r in given["open_risks"]]
    if given.get("next_action") is not None:
        h["next_action"] = {"command": None, **given["next_action"]}
    if goal:
        h["active_goal"]["goal"] = goal
    return h


def unfilled(obj: Any, path: str = "") -> list[str]:
    """JSON-pointer paths of every placeholder left in a handoff document."""
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += unfilled(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += unfilled(v, f"{path}/{i}")
    elif isinstance(obj, str) and PLACEHOLDER_RE.search(obj):
        found.append(path or "/")
    return found


def render_markdown(h: dict[str, Any], package_id: str, record: dict[str, Any] | None = None) -> str:
    """``record``: the package's ``handoff_claims.json`` (where each part came from, each
    claim's check), shown beside the parts; placeholders render as "not recorded". The text of
    ``templates/handoff_summary.md.j2``, rendered without jinja2 (``handoff_md``)."""
    rec = record or {}
    checked = {c["where"]: c for c in rec.get("claims") or []}
    return handoff_md.render(h, package_id, rec.get("parts") or {}, checked)
