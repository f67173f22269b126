"""Find the current Claude Code session transcript of a directory, so ``status`` needs no path.

Claude Code stores sessions in ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<slug>/`` where the
slug is the realpath with every non-alphanumeric character replaced by ``-``. Stdlib only: the
statusline and hooks use this too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def project_slug(directory: Path) -> str:
    return _NON_ALNUM.sub("-", os.path.realpath(directory))


def project_dir(directory: Path) -> Path:
    return claude_config_dir() / "projects" / project_slug(directory)


def current_transcript(directory: Path) -> Path | None:
    """The newest ``*.jsonl`` (by mtime) of ``directory``'s project folder, if any."""
    folder = project_dir(directory)
    try:
        candidates = [p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return None
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime_ns, p.name))
