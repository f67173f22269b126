"""pydantic model of ``curation.json`` (schemas/curation-decisions.schema.json).

``state`` reads and writes the file with the stdlib only (hot paths); this model is the
format's contract: the schema is generated from it and tests check both against real files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contextfork.cold.decisions import BRIEF_CAP


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BriefModel(_Strict):
    key: str = Field(min_length=1, description="stable key of the first step of the fold")
    keys: list[str] = Field(min_length=1, description="stable keys of every step the brief covers")
    text: str = Field(min_length=1, max_length=BRIEF_CAP,
                      description="the agent's own words, verbatim except redacted secrets")
    redactions: int = Field(ge=0, description="secrets replaced by placeholders in text")


class CurationFile(_Strict):
    """``.contextfork/cold/<session>/curation.json``: the agent's decisions for one session."""

    format: Literal["contextfork-curation"]
    version: Literal[1]
    session_id: str = Field(min_length=1)
    revision: int = Field(ge=0, description="number of changes recorded so far")
    pinned: list[str] = Field(description="step keys held raw through every fold (sorted)")
    expanded: list[str] = Field(description="step keys shown raw again until refolded (sorted)")
    briefs: list[BriefModel] = Field(description="agent briefs, sorted by key")
    boundary: str | None = Field(
        description="step key before which the next epoch commit stops folding (null: auto)")
    sha256: str = Field(pattern="^[0-9a-f]{64}$",
                        description="SHA-256 of the canonical JSON of every other field")
