"""pydantic models of the package files the model-written handoff and the travelling
conversation add (``handoff_claims.json``, ``conversation.json``); their schemas are generated
into ``schemas/`` by ``contextfork.schemagen``. The writers (``package.claims``,
``package.conversation``) build plain dicts; tests check them against these models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Claim(_Strict):
    where: str = Field(description="JSON pointer of the cited item in handoff.json")
    kind: str
    ref: str
    status: Literal["verified", "unverified", "refused"]
    detail: str = Field(description="what the machine checked, or why it could not")


class PartSource(BaseModel):
    """Where a part came from; harvested parts name the harness, step, sections and hash."""

    model_config = ConfigDict(extra="allow")
    source: Literal["model", "harness-summary", "machine-seeded", "not recorded"]


class ClaimCounts(_Strict):
    verified: int
    unverified: int


class HandoffClaims(_Strict):
    claims_version: str = "1"
    parts: dict[str, PartSource]
    claims: list[Claim] = Field(default_factory=list)
    counts: ClaimCounts


class Conversation(_Strict):
    conversation_version: str = "1"
    format: Literal["claude-code", "codex", "pi"]
    session_id: str
    exported_root: str = Field(description="the exporting repository root, rewritten on resume")
    lines: int
    redactions: int
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of conversation.jsonl")
    file_name: str
    dated_dirs: list[str] = Field(default_factory=list, description="Codex: YYYY, MM, DD")
