"""The 6-part handoff (IPSF-1.2): model, machine seeding, merging, rendering, placeholders.

Parts the machine cannot know stay explicit ``[[unfilled: ...]]`` placeholders so ``validate``
can report them; machine-seeded content is marked so an agent confirms or corrects it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextfork.errors import UsageError

HANDOFF_VERSION = "1.2"
PLACEHOLDER_RE = re.compile(r"\[\[unfilled:[^\]]*\]\]")


def placeholder(what: str) -> str:
    return f"[[unfilled: {what}]]"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


EvidenceKind = Literal["file", "commit", "step", "test", "command", "url", "note"]


class Evidence(_Strict):
    kind: EvidenceKind
    ref: str
    note: str | None = None


class ActiveGoal(_Strict):
    goal: str = placeholder("the active goal, in one sentence")
    scope: list[str] = Field(default_factory=list)
    acceptance_criteria: list[str] = Field(
        default_factory=lambda: [placeholder("how we know it is done")]
    )
    candidates: list[str] = Field(
        default_factory=list, description="machine-seeded goal candidates (first/latest request)"
    )
    machine_seeded: bool = False


class Decision(_Strict):
    decision: str
    rationale: str | None = None
    tradeoffs: str | None = None
    rejected_alternatives: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)


class WorkingTreeState(_Strict):
    """Part 3, always machine-filled from git at export time."""

    branch: str | None
    detached: bool
    head: str | None
    worktree_tree_sha: str
    staged: int
    modified: int
    deleted: int
    renamed: int
    untracked: int
    untracked_not_captured: int
    summary: str


class FailedApproach(_Strict):
    approach: str
    barred_action: str
    error_excerpt: str | None = None
    step: int | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    machine_seeded: bool = False


class Risk(_Strict):
    risk: str
    mitigation: str | None = None


class NextAction(_Strict):
    action: str = placeholder("the single next action for the new session")
    command: str | None = None


class Handoff(_Strict):
    handoff_version: str = HANDOFF_VERSION
    active_goal: ActiveGoal = Field(default_factory=ActiveGoal)
    settled_decisions: list[Decision] = Field(
        default_factory=lambda: [Decision(decision=placeholder("decisions settled so far"))]
    )
    working_tree_state: WorkingTreeState
    failed_approaches: list[FailedApproach] = Field(default_factory=list)
    open_risks: list[Risk] = Field(default_factory=lambda: [Risk(risk=placeholder("open risks"))])
    next_action: NextAction = Field(default_factory=NextAction)
    touched_files: list[str] = Field(default_factory=list)


class HandoffInput(_Strict):
    """What an agent (or --handoff FILE / the MCP tool) supplies; every part optional."""

    active_goal: ActiveGoal | None = None
    settled_decisions: list[Decision] | None = None
    failed_approaches: list[FailedApproach] | None = None
    open_risks: list[Risk] | None = None
    next_action: NextAction | None = None


def load_input(path: Path) -> HandoffInput:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"handoff file not found: {path}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"handoff file {path} is not valid JSON: {exc}") from exc
    return parse_input(raw, str(path))


def parse_input(raw: Any, origin: str) -> HandoffInput:
    try:
        return HandoffInput.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise UsageError(f"handoff {origin}: field {where}: {first['msg']}") from exc


def build(
    tree: WorkingTreeState,
    given: HandoffInput | None = None,
    *,
    goal: str | None = None,
    seeded_failures: list[FailedApproach] | None = None,
    goal_candidates: list[str] | None = None,
    touched_files: list[str] | None = None,
) -> Handoff:
    """Merge agent-supplied parts over machine seeds; unknown parts stay placeholders."""
    h = Handoff(working_tree_state=tree, touched_files=sorted(touched_files or []))
    if goal_candidates:
        h.active_goal = ActiveGoal(
            goal=h.active_goal.goal, candidates=goal_candidates, machine_seeded=True
        )
    if seeded_failures:
        h.failed_approaches = list(seeded_failures)
    if given is not None:
        if given.active_goal is not None:
            h.active_goal = given.active_goal
        if given.settled_decisions is not None:
            h.settled_decisions = given.settled_decisions
        if given.failed_approaches is not None:
            h.failed_approaches = given.failed_approaches + [
                f for f in h.failed_approaches if f.machine_seeded
            ]
        if given.open_risks is not None:
            h.open_risks = given.open_risks
        if given.next_action is not None:
            h.next_action = given.next_action
    if goal:
        h.active_goal.goal = goal
    return h


def unfilled(obj: Any, path: str = "") -> list[str]:
    """JSON-pointer-ish paths of every placeholder left in a handoff document."""
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


def render_markdown(h: Handoff, package_id: str) -> str:
    from contextfork.resources import render_template

    return render_template("handoff_summary.md.j2", h=h.model_dump(), package_id=package_id)
