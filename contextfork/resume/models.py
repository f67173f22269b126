"""pydantic model of the consumed state: who resumed a package and when.

A package's bytes are sealed by its manifest; who consumed it is a mutable fact, so it lives in
a separate file beside the package (``<id>.state.json``, see ``state``) with its own schema.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

STATE_VERSION = "1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Consumption(_Strict):
    session_id: str | None = Field(description="the session that resumed the package, if known")
    at: str = Field(description="UTC ISO-8601 time of the resume")
    user: str | None = None
    host: str | None = None
    applied: bool = Field(description="whether --apply restored the working state")
    drift: bool = Field(description="whether the live repository had drifted from the package")


class ConsumedState(_Strict):
    """``.contextfork/packages/<id>.state.json``: beside the package, outside its hash."""

    state_version: str = STATE_VERSION
    package_id: str
    consumptions: list[Consumption] = Field(default_factory=list)
