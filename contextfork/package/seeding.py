"""What the export can know from a transcript: telemetry, failed commands, touched files, goals.

The transcript work itself lives in ``contextfork.telemetry.seed``; this module only resolves
which transcript to read (``--transcript PATH`` or ``--transcript auto``: the Claude Code
session that did the work in the repository, see ``pick_session``) and validates the trigger name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.errors import UsageError
from contextfork.inputfile import require_regular

TRIGGERS = ("cli", "pre-commit", "pre-compact", "mcp", "fork", "demo")


def check_trigger(value: str) -> str:
    if value not in TRIGGERS:
        raise UsageError(f"unknown trigger {value!r}; one of {', '.join(TRIGGERS)}")
    return value


def resolve_transcript(spec: Path, root: Path) -> Path:
    if str(spec) == "auto":
        from contextfork.package.pick_session import choose

        return choose(root).chosen.path
    return require_regular(spec, "transcript")


def seed_from_transcript(spec: Path, root: Path) -> dict[str, Any]:
    """Seed dict for ``ExportOptions.seed`` (see ``telemetry.seed.seed_session`` for keys)."""
    from contextfork.telemetry.seed import seed_from_path

    return seed_from_path(resolve_transcript(spec, root))
