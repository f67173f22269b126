"""What the export can know from a transcript: telemetry, failed commands, touched files, goals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextfork.errors import UsageError

TRIGGERS = ("cli", "pre-commit", "pre-compact", "mcp", "fork", "demo")


def check_trigger(value: str) -> str:
    if value not in TRIGGERS:
        raise UsageError(f"unknown trigger {value!r}; one of {', '.join(TRIGGERS)}")
    return value


def seed_from_transcript(path: Path) -> dict[str, Any]:
    """Seed dict for ``ExportOptions.seed``; filled by the telemetry area."""
    if not path.exists():
        raise UsageError(f"transcript not found: {path}")
    return {}
