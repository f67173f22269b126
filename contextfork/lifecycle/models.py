"""pydantic model of how the git hooks are set up (``.contextfork/git-hooks.json``).

The consumed state beside each package (who resumed it) is ``contextfork.resume.models``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CONFIG_VERSION = "1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InstalledHook(_Strict):
    hook: Literal["pre-commit", "post-commit"]
    path: str
    legacy: str | None = Field(description="foreign hook kept and chained, restored on uninstall")


class GitHookConfig(_Strict):
    """``.contextfork/git-hooks.json``: how the git hooks were installed and what they keep."""

    config_version: str = CONFIG_VERSION
    keep_checkpoints: int = Field(default=20, ge=0, description="checkpoints kept; 0 = keep all")
    strict: bool = Field(default=False, description="a checkpoint failure blocks the commit")
    python: str = Field(description="interpreter the hook scripts call")
    hooks: list[InstalledHook] = Field(default_factory=list)
