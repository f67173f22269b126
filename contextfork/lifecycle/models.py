"""pydantic models for the files the lifecycle writes beside packages (never inside them).

A package's bytes are sealed by its manifest; who consumed it and how the git hooks are set up
are mutable facts, so they live in separate files with their own schemas.
"""

from __future__ import annotations

from typing import Literal

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


class InstalledHook(_Strict):
    hook: Literal["pre-commit", "post-commit"]
    path: str
    legacy: str | None = Field(description="foreign hook kept and chained, restored on uninstall")


class GitHookConfig(_Strict):
    """``.contextfork/git-hooks.json``: how the git hooks were installed and what they keep."""

    config_version: str = STATE_VERSION
    keep_checkpoints: int = Field(default=20, ge=0, description="checkpoints kept; 0 = keep all")
    strict: bool = Field(default=False, description="a checkpoint failure blocks the commit")
    python: str = Field(description="interpreter the hook scripts call")
    hooks: list[InstalledHook] = Field(default_factory=list)
