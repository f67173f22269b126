"""pydantic models for every file of a handoff package (IPSF-1.2 names kept).

Each model has a JSON Schema in ``schemas/`` (generated from these models by
``contextfork.schemagen`` and checked against them in tests).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contextfork.package.handoff import HANDOFF_VERSION, placeholder

MANIFEST_VERSION = "1.2"

Trigger = Literal["cli", "pre-commit", "pre-compact", "mcp", "fork", "demo"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- git_status.json -------------------------------------------------------------------------


class Rename(_Strict):
    old: str
    new: str
    score: str | None = None
    staged: bool = True


class ModeChange(_Strict):
    path: str
    old_mode: str
    new_mode: str


class Submodule(_Strict):
    path: str
    state: str = Field(description="porcelain v2 submodule field, e.g. 'SC..' (commit changed)")


class GitStatusFile(_Strict):
    branch: str | None = Field(description="current branch; null when detached or unborn-detached")
    detached: bool
    unborn: bool
    head: str | None = Field(description="full HEAD SHA; null on an unborn HEAD")
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    staged: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    renamed: list[Rename] = Field(default_factory=list)
    mode_changes: list[ModeChange] = Field(default_factory=list)
    untracked: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    submodules: list[Submodule] = Field(default_factory=list)
    undecodable_names: list[str] = Field(
        default_factory=list, description="paths that are not valid UTF-8, shown with \\x escapes"
    )
    operation: Literal["merge", "rebase", "cherry-pick", "revert", "bisect"] | None = Field(
        default=None,
        description="a git operation in progress at export (its state is not captured)",
    )


# --- untracked_manifest.json -----------------------------------------------------------------

NotCapturedReason = Literal[
    "too_large", "total_cap", "symlink", "non_utf8_name", "unreadable", "special"
]


class UntrackedFile(_Strict):
    path: str
    size: int
    mode: str = Field(description="octal file mode, e.g. '100644', '100755', '120000'")
    sha256: str | None
    captured: bool
    reason: NotCapturedReason | None = None
    link_target: str | None = None
    secrets: list[str] = Field(
        default_factory=list,
        description="secret kinds (contextfork.redact rules) found in the captured snapshot, "
        "which is kept byte-exact; `contextfork push` refuses the package unless --allow-secrets",
    )


class UntrackedManifest(_Strict):
    manifest_version: str = MANIFEST_VERSION
    file_cap_bytes: int
    total_cap_bytes: int
    captured_bytes: int
    files: list[UntrackedFile] = Field(default_factory=list)


# --- session_metadata.json -------------------------------------------------------------------


class TranscriptRef(_Strict):
    path: str
    sha256: str
    size: int
    format: str | None = None


class SessionMetadata(_Strict):
    manifest_version: str = MANIFEST_VERSION
    package_id: str
    created_at: str
    contextfork_version: str
    trigger: Trigger
    parent_session_id: str | None = None
    child_session_id: str | None = None
    harness: str | None = None
    repo_name: str
    head: str | None
    branch: str | None
    detached: bool
    unborn: bool
    worktree_tree_sha: str
    transcript: TranscriptRef | None = None
    telemetry: dict[str, Any] | None = None
    cold_store_refs: list[str] = Field(default_factory=list)
    redactions: int = 0


# --- manifest.json ---------------------------------------------------------------------------


SHA256 = r"^[0-9a-f]{64}$"


class ManifestEntry(_Strict):
    path: str
    sha256: str = Field(pattern=SHA256)
    size: int = Field(ge=0)


class Manifest(_Strict):
    manifest_version: str = MANIFEST_VERSION
    package_id: str
    files: list[ManifestEntry]
    package_sha256: str = Field(
        pattern=SHA256, description="sha256 of the canonical JSON of `files`"
    )


# --- handoff.json (the 6 parts) ----------------------------------------------------------

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
