"""Roles as data: which sections of the parent a role keeps, in what order, within what budget.

The built-in roles below are the defaults; ``.contextfork/policy.json`` may override a role,
add a new one, and map any ``agent_type`` (``Explore``, ``plugin:name``, …) to a role under its
``slices`` key (validated strictly by ``telemetry.models.SlicePolicy``; read leniently here,
stdlib only, because the SubagentStart hook runs this). An agent type with no mapping gets a
role by a fixed name rule (``role_for``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextfork.layout import policy_file

#: What each section holds (the ``sections`` a role lists, in its order).
SECTIONS: dict[str, str] = {
    "task": "the delegated task, and the folded steps of the parent that match it (page-in)",
    "goal": "the active goal and acceptance criteria (handoff part 1)",
    "decisions": "settled decisions and rejected alternatives (part 2)",
    "do_not_retry": "failed approaches with their barred action (part 4) and the parent's failed calls",
    "risks": "open risks (part 5)",
    "next_action": "the immediate next action (part 6)",
    "files_touched": "files the parent edited or wrote, and what git reports as changed",
    "diff_summary": "the package's git diff, per file: lines added and removed",
    "recent_work": "the exact file ranges and outputs of the parent's newest file and shell calls",
    "failures_on_files": "failed calls of the parent on the files in play",
    "test_runs": "test commands the parent ran, newest result each, failing first",
    "files_under_test": "test files the parent read, edited or ran",
    "reads": "files and ranges the parent read (names only: the subagent reads them itself)",
    "commands": "each shell command the parent ran, newest first, with its status and first line",
    "working_files": "the freshest content the parent saw of the files it worked on most recently "
                     "and the task names (newest read or write, then the edits after it)",
    "command_outputs": "the commands the parent ran most recently and most often (and the task "
                       "names), each with the tail of its newest output",
    "working_set": "working_files and command_outputs in one ranked run, each kind held to its "
                   "share of the room (the parent's recent mix of file and shell calls)",
}

DEFAULT_BUDGET = 9_000  # characters: fits the hooks' additionalContext cap (9,500)
# A slice stays within a tenth of what the parent's newest model call was sent (its recorded
# input): CONTEXT_SHARE characters per token of it (a slice runs about 3 characters a token;
# 0.27 keeps clear of 10 %), but never below CONTEXT_FLOOR characters (a tiny parent's slice
# would be empty; ~600 tokens are nothing next to any harness's own prompt).
CONTEXT_SHARE = 0.27
CONTEXT_FLOOR = 2_000

# The working set (files and commands with their content, each kind held to its share) comes
# early and fills at most SET_SHARE of the room; the task's page-in from the cold store comes
# right after it (it holds folded steps that match the task's words, not what the subagent goes
# back to: before the working set it cost the working set its room; what does not fit is named
# as peek-able steps); lists of names after that are cut to what is left; the exact newest
# calls (recent_work) take what room remains.
BUILTIN_ROLES: dict[str, dict[str, Any]] = {
    "planner": {"sections": ["goal", "decisions", "do_not_retry", "risks", "files_touched",
                             "reads", "working_set", "task"]},
    "coder": {"sections": ["next_action", "diff_summary", "failures_on_files", "working_set", "task",
                           "files_touched", "commands", "reads", "do_not_retry", "recent_work"]},
    "tester": {"sections": ["test_runs", "working_set", "task", "files_under_test", "do_not_retry",
                            "files_touched", "commands"]},
    "reviewer": {"sections": ["goal", "decisions", "diff_summary", "test_runs", "working_set", "task",
                              "do_not_retry", "files_touched", "commands"]},
    "explorer": {"sections": ["goal", "reads", "working_set", "task", "files_touched", "commands",
                              "do_not_retry"]},
    "default": {"sections": ["goal", "next_action", "failures_on_files", "working_set", "task",
                             "files_touched", "commands", "reads", "do_not_retry", "recent_work"]},
}

# agent_type name → role, checked in order on the casefolded name (after explicit mappings).
_NAME_RULE: tuple[tuple[str, str], ...] = (
    ("plan", "planner"), ("architect", "planner"),
    ("test", "tester"), ("qa", "tester"),
    ("review", "reviewer"), ("audit", "reviewer"),
    ("explor", "explorer"), ("search", "explorer"), ("research", "explorer"), ("guide", "explorer"),
    ("scout", "explorer"),
    ("code", "coder"), ("implement", "coder"), ("engineer", "coder"), ("fix", "coder"),
)  # fmt: skip


class Role:
    def __init__(self, name: str, sections: list[str], budget: int) -> None:
        self.name = name
        self.sections = sections
        self.budget = budget


def read_slices(root: Path | None) -> dict[str, Any]:
    """The policy file's ``slices`` object, or {} (missing or broken file: the defaults)."""
    if root is None:
        return {}
    try:
        with open(policy_file(root), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    slices = data.get("slices") if isinstance(data, dict) else None
    return slices if isinstance(slices, dict) else {}


def _roles(slices: dict[str, Any]) -> dict[str, dict[str, Any]]:
    roles = {k: dict(v) for k, v in BUILTIN_ROLES.items()}
    extra = slices.get("roles")
    if isinstance(extra, dict):
        for name, spec in extra.items():
            if isinstance(name, str) and isinstance(spec, dict):
                roles[name] = {**roles.get(name, {}), **spec}
    return roles


def role_for(agent_type: str | None, slices: dict[str, Any]) -> str:
    """The role of an agent type: the policy's mapping, else the name rule, else ``default``."""
    mapping = slices.get("agent_types")
    if agent_type and isinstance(mapping, dict):
        mapped = mapping.get(agent_type)
        if isinstance(mapped, str):
            return mapped
    name = (agent_type or "").split(":")[-1].casefold()
    if name in BUILTIN_ROLES:
        return name
    for needle, role in _NAME_RULE:
        if needle in name:
            return role
    return "default"


# pi 0.73.1's subagent example extension starts a child as ``pi --mode json -p --no-session
# [--model M] [--tools a,b] [--append-system-prompt <tmp>/prompt-<agent name>.md] "Task: …"``.
_PI_PROMPT_FILE = re.compile(r"(?:^|[/\\])prompt-([\w.-]{1,100})\.md$")
_PI_WRITE_TOOLS = {"bash", "edit", "write"}


def pi_child(argv: list[str]) -> tuple[str | None, str | None]:
    """(agent type, role) of a child pi from its own command line: the agent's name is in the
    file name of its ``--append-system-prompt``; without one, a ``--tools`` list that can
    neither run commands nor change files (pi's read-only agents) is an explorer. (None, None):
    nothing to tell (the role then comes from the agent type, else ``default``)."""
    name: str | None = None
    tools: set[str] | None = None
    for i, arg in enumerate(argv[:-1]):
        nxt = argv[i + 1]
        if arg == "--append-system-prompt":
            m = _PI_PROMPT_FILE.search(nxt)
            name = m.group(1) if m else name
        elif arg == "--tools":
            tools = {t.strip().casefold() for t in nxt.split(",") if t.strip()}
    if name:
        return name, None
    if tools is not None and tools and not tools & _PI_WRITE_TOOLS:
        return None, "explorer"
    return None, None


def resolve(role: str, slices: dict[str, Any], budget: int | None = None) -> Role | None:
    """The role's definition (None: no such role); ``budget`` overrides the role's own."""
    spec = _roles(slices).get(role)
    if spec is None:
        return None
    sections = [s for s in spec.get("sections", []) if isinstance(s, str) and s in SECTIONS]
    own = spec.get("budget")
    default = slices.get("budget")
    chosen = budget if budget is not None else own if isinstance(own, int) else default
    if not isinstance(chosen, int) or isinstance(chosen, bool) or chosen <= 0:
        chosen = DEFAULT_BUDGET
    return Role(role, sections, chosen)


def role_names(slices: dict[str, Any]) -> list[str]:
    return sorted(_roles(slices))
