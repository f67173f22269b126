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
import json
import re
from pathlib import Path
from typing import Any

from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import read_regular

HANDOFF_VERSION = "1.2"
MAX_HANDOFF_BYTES = 16 * 1024 * 1024
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


# A barred action may be written "Do not X", "Don't X", "Never X" or just "X"; every brief says
# "do not" itself, so the renderers strip the writer's own (and it is said once).
_DO_NOT = re.compile(r"^(?:\*\*)?(?:do\s+not|don['’]t|never)\b(?:\*\*)?[\s:,.-]*", re.IGNORECASE)


def barred(action: object) -> str:
    """The barred action as the words after "do not" (jinja filter ``barred``)."""
    text = _DO_NOT.sub("", str(action or "").strip(), count=1)
    if text[:1].isupper() and not text[1:2].isupper():  # "Raise it" → "raise it"; "NPM" stays
        text = text[0].lower() + text[1:]
    return text


def names_step(failure: object) -> bool:
    """True when the approach text already names its step (jinja filter ``names_step``), so a
    renderer does not add "(step N)" a second time."""
    if not isinstance(failure, dict) or failure.get("step") in (None, ""):
        return False
    step = re.escape(str(failure["step"]))
    return bool(re.search(rf"\bsteps?\s*#?{step}\b", str(failure.get("approach") or ""), re.I))


def step_suffix(failure: dict[str, Any]) -> str:
    """" (step N)" for a one-line rendering, or "" when there is none or the approach has it."""
    return f" (step {failure['step']})" if failure.get("step") and not names_step(failure) else ""


JINJA_FILTERS = {"barred": barred, "names_step": names_step}


def load_input(path: Path) -> dict[str, Any]:
    """Read --handoff FILE and check it against ``HandoffInput`` (pydantic, imported lazily)."""
    try:
        raw = json.loads(read_regular(path, "handoff file", limit=MAX_HANDOFF_BYTES))
    except NotFoundError as exc:
        raise UsageError(f"handoff file not found: {path}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"handoff file {path} is not valid JSON: {exc}") from exc
    return parse_input(raw, str(path))


def parse_input(raw: Any, origin: str) -> dict[str, Any]:
    """Validate agent-supplied parts; returns them normalized (defaults filled), unset parts left out."""
    from pydantic import ValidationError

    from contextfork.package.models import HandoffInput

    try:
        model = HandoffInput.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise UsageError(f"handoff {origin}: field {where}: {first['msg']}") from exc
    return model.model_dump(mode="json", exclude_none=False, exclude_unset=True)


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


def prepare_markdown() -> None:
    """Import jinja2 and load the summary template now (export calls this while git runs)."""
    from contextfork.resources import load_template

    load_template("handoff_summary.md.j2")


def render_markdown(h: dict[str, Any], package_id: str) -> str:
    from contextfork.resources import render_template

    return render_template("handoff_summary.md.j2", h=h, package_id=package_id)
