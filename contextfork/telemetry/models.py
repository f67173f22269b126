"""pydantic models of the files telemetry reads and writes: policy.json and the status report.

The committed schemas (schemas/context-policy.schema.json, schemas/context-telemetry.schema.json)
are generated from these models; a test fails when the two drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from contextfork.errors import UsageError

TELEMETRY_VERSION = "1"  # keep equal to the Literal below and to policy.POLICY_VERSION


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TokenThresholds(_Strict):
    warning: int = Field(50_000, gt=0, description="caution (amber) from this many active tokens")
    fork: int = Field(80_000, gt=0, description="fork recommended (red) from this many tokens")
    hard_limit: int | None = Field(None, gt=0, description="critical regardless of anything else")

    @model_validator(mode="after")
    def _ordered(self) -> TokenThresholds:
        if self.warning >= self.fork:
            raise ValueError("warning must be lower than fork")
        if self.hard_limit is not None and self.hard_limit < self.fork:
            raise ValueError("hard_limit must not be lower than fork")
        return self


class StepThresholds(_Strict):
    warning: int = Field(75, gt=0)
    fork: int = Field(120, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> StepThresholds:
        if self.warning >= self.fork:
            raise ValueError("warning must be lower than fork")
        return self


SliceSection = Literal[
    "task", "goal", "decisions", "do_not_retry", "risks", "next_action", "files_touched",
    "diff_summary", "recent_work", "failures_on_files", "test_runs", "files_under_test", "reads",
    "commands", "working_files", "command_outputs", "working_set",
]  # keep equal to contextfork.slice.roles.SECTIONS (a test checks)


class SliceRole(_Strict):
    """One role: the sections of the parent it keeps, in order, and its size."""

    sections: list[SliceSection] | None = Field(
        None, description="what the role keeps, in this order (default: the built-in role's)"
    )
    budget: int | None = Field(None, gt=0, description="most characters of the slice")


class SlicePolicy(_Strict):
    """Role slices for subagents (docs/slice.md): override or add roles, map agent types."""

    budget: int | None = Field(None, gt=0, description="default size of every role's slice")
    roles: dict[str, SliceRole] = Field(
        default_factory=dict, description="built-in roles overridden, or new ones, by name"
    )
    agent_types: dict[str, str] = Field(
        default_factory=dict,
        description="agent_type (e.g. Explore, plugin:name) -> role name",
    )


class ProxyBand(_Strict):
    """The band the API proxy keeps a conversation in (docs/proxy.md); the environment
    variables ``CONTEXTFORK_PROXY_BUDGET`` and ``CONTEXTFORK_PROXY_WINDOW_CAP`` override it."""

    budget_tokens: int | None = Field(
        None, gt=0, description="epoch budget in estimated message tokens (beats budget_share)"
    )
    budget_share: float | None = Field(
        None, gt=0, le=1, description="epoch budget as a share of min(window, window_cap)"
    )
    window_cap: int | None = Field(None, gt=0, description="most window tokens the band uses")


class Policy(_Strict):
    """``.contextfork/policy.json``: IPSF "Ambient Context Telemetry" thresholds."""

    policy_version: Literal["1"] = "1"
    tokens: TokenThresholds = Field(default_factory=lambda: TokenThresholds())
    steps: StepThresholds = Field(default_factory=lambda: StepThresholds())
    slices: SlicePolicy | None = Field(None, description="role slices for subagents")
    proxy: ProxyBand | None = Field(None, description="the API proxy's band")


def parse_policy(raw: Any, origin: str) -> Policy:
    """Validate a policy; the error names the first bad field and how to fix it."""
    try:
        return Policy.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise UsageError(
            f"{origin}: {where}: {first['msg']}",
            hint="fix that field or recreate the file with `contextfork policy init --force`",
        ) from None


def load_policy_file(path: Path) -> Policy:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise UsageError(f"{path}: not valid JSON ({err})") from None
    return parse_policy(raw, str(path))


# --- the status report ---------------------------------------------------------------------


class SessionInfo(_Strict):
    format: str
    session_id: str | None = None
    path: str | None = None
    model: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    age_seconds: float | None = None
    malformed_lines: int = 0
    subagents: int = 0


class Breakdown(_Strict):
    system_prompt: int = 0
    user_history: int = 0
    assistant_history: int = 0
    tool_outputs: int = 0


class Tokens(_Strict):
    total: int | None = Field(
        description="context tokens: what the next model call would be sent (see source)"
    )
    source: Literal["recorded", "counted", "estimated", "none"]
    breakdown: Breakdown
    breakdown_method: Literal["counted", "estimated", "chars-scaled-to-recorded", "none"]
    scaled_to_recorded: bool
    last_output_tokens: int | None = None
    context_window: int | None = None
    context_used_percent: float | None = None
    includes_harness_overhead: bool = Field(
        default=False,
        description="total holds the harness's system prompt and tool schemas (recorded, or "
        "counted plus the overhead fitted on recorded usage); false: messages only",
    )
    harness_overhead: int | None = Field(
        default=None, description="the overhead a counted total adds (null when recorded or unknown)"
    )


class StepStats(_Strict):
    total: int = Field(description="steps over the whole chain (a fork's copied steps included)")
    since_compaction: int
    since_fork: int | None = Field(
        default=None, description="steps this fork took itself; null when not a fork"
    )
    tool_calls: int
    tool_errors: int


class CompactionInfo(_Strict):
    before_step: int
    timestamp: str | None = None
    trigger: str | None = None
    pre_tokens: int | None = None


class FailedCommand(_Strict):
    step: int
    tool: str
    command: str
    exit_code: int | None = None
    error_excerpt: str


class Billing(_Strict):
    method: Literal["ccusage", "step-usage"]
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    total_tokens: int
    entries: int
    files: int


class RiskInfo(_Strict):
    level: Literal["optimal", "caution", "critical"]
    color: Literal["green", "amber", "red"]
    recommendation: Literal["continue", "wrap_milestone", "fork_recommended"]
    label: str
    reasons: list[str]
    badge: str


class PolicyInfo(_Strict):
    source: str = Field(description="path of policy.json, or 'defaults'")
    policy: Policy


class LatestPackage(_Strict):
    package_id: str
    path: str
    valid: bool
    errors: int
    warnings: int


class GitInfo(_Strict):
    root: str
    branch: str | None
    detached: bool
    unborn: bool
    head: str | None
    staged: int
    modified: int
    deleted: int
    renamed: int
    untracked: int
    conflicts: int
    dirty: bool
    latest_package: LatestPackage | None = None
    error: str | None = None


class ProxyInfo(_Strict):
    """What the model-API proxy really sent for this session (``contextfork run``)."""

    requests: int
    edited: int = Field(description="requests sent as the folded view")
    as_sent: int = Field(description="requests whose view was the request itself")
    passed_through: int = Field(description="requests forwarded untouched because of a problem")
    passed_reasons: dict[str, int]
    bytes_in: int = Field(description="the conversation as the client sent it, summed")
    bytes_out: int = Field(description="as it went out, summed")
    saving: float | None = Field(description="1 - bytes_out / bytes_in")
    last_sent_tokens: int | None = Field(description="prompt tokens of the last call, as the API counted them")
    last_unfolded_tokens: int | None = Field(description="the same call unfolded (scaled by its bytes)")
    prompt_tokens: int | None = Field(description="prompt tokens of every call, as the API counted them")
    cached_share: float | None
    conversations: int = Field(description="the main conversation and its subagents")
    budget_tokens: int | None = Field(
        default=None, description="the band the proxy keeps: its epoch budget (estimated message tokens)")


class Telemetry(_Strict):
    """``contextfork status --json`` data: the IPSF context metrics of one session + repo."""

    telemetry_version: Literal["1"] = "1"
    generated_at: str
    session: SessionInfo | None
    tokens: Tokens | None
    steps: StepStats | None
    compactions: list[CompactionInfo]
    touched_files: list[str]
    failed_commands: list[FailedCommand]
    billing: Billing | None
    risk: RiskInfo | None
    policy: PolicyInfo
    git: GitInfo | None
    proxy: ProxyInfo | None = None
    notes: list[str] = Field(default_factory=list)
