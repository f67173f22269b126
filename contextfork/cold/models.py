"""pydantic models of every file the cold store writes (the schemas in schemas/ mirror them).

The hot path (page-in from hooks) works on plain dicts and never imports this module;
``validate`` and the tests use these models to check real files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contextfork.cold.layout import POLICY_BOUNDS

Sha256 = str


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RedactionRecord(_Model):
    field: Literal["content", "summary", "readable"]
    kind: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    original_length: int = Field(ge=1)


class ColdNode(_Model):
    ipcf_version: Literal["1.1"]
    node_version: Literal[1]
    session_id: str
    step_id: int = Field(ge=1, le=999_999)
    step_key: str = Field(pattern=r"^step_\d{6}$")
    summary: str
    content: str
    content_encoding: Literal["utf-8", "base64"]
    payload_bytes: int = Field(ge=0)
    identifiers: list[str]
    files: list[str]
    commands: list[str]
    errors: list[str]
    # Our recall-index terms (outside the normative projection); absent on version-1 nodes.
    index_terms: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    index_files: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    index_commands: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    index_errors: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    intents: list[str]
    refs: list[int]
    token_count: int = Field(ge=0)
    readable: str | None = Field(default=None, exclude_if=lambda v: v is None)
    readable_token_count: int | None = Field(default=None, ge=0, exclude_if=lambda v: v is None)
    summary_token_count: int = Field(ge=0)
    tokenizer: Literal["o200k_base"]
    sanitized: bool
    redactions: list[RedactionRecord]
    projection_version: Literal[1, "ipcf-projection-v2"]
    policy_sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    source: dict[str, object]
    payload_sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    projection_sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    artifact_sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")


class RecallEntry(_Model):
    step_id: int
    summary: str
    token_count: int
    refs: list[int]
    intents: list[str]
    superseded_by: int | None
    payload_sha256: Sha256
    projection_sha256: Sha256
    artifact_sha256: Sha256
    path: str


class IntentEntry(_Model):
    steps: list[int]
    owner: int


class RecallIndex(_Model):
    ipcf_version: Literal["1.1"]
    index_version: Literal[1]
    session_id: str
    policy_sha256: Sha256
    node_count: int
    nodes: dict[str, RecallEntry]
    terms: dict[str, list[int]]
    intents: dict[str, IntentEntry]


class HydrationPolicy(_Model):
    policy_version: Literal[1]
    ipcf_version: Literal["1.1"]
    per_call_token_cap: int = Field(ge=0, le=POLICY_BOUNDS["per_call_token_cap"][1])
    per_turn_token_cap: int = Field(ge=0, le=POLICY_BOUNDS["per_turn_token_cap"][1])
    tokenizer: Literal["o200k_base"]
    normalization: str
    prefix_min_length: int = Field(ge=1, le=POLICY_BOUNDS["prefix_min_length"][1])
    prefix_max_extra: int = Field(ge=0, le=POLICY_BOUNDS["prefix_max_extra"][1])
    tie_break: Literal["newest_step"]
    intent_ownership: Literal["newest_owner_or_nothing"]
    follow_refs: int = Field(ge=0, le=1)
    redaction: str


class EvictionEntry(_Model):
    seq: int = Field(ge=1)
    turn: int = Field(ge=0)
    step_id: int = Field(ge=1)
    reason: Literal["turn_end", "explicit"]
    tokens: int = Field(ge=0)
    at: str


class EvictionLog(_Model):
    log_version: Literal[1]
    session_id: str
    entries: list[EvictionEntry]


MODEL_FOR_FILE: dict[str, type[BaseModel]] = {
    "cold-node.schema.json": ColdNode,
    "recall-index.schema.json": RecallIndex,
    "hydration-policy.schema.json": HydrationPolicy,
    "eviction-log.schema.json": EvictionLog,
}
