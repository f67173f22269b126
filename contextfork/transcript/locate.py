"""Find the current Claude Code session transcript of a directory, so ``status`` needs no path.

Claude Code stores sessions in ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<slug>/`` where the
slug is the realpath with every UTF-16 code unit outside ``[A-Za-z0-9]`` replaced by ``-``; a
slug over 200 characters is cut to 200 and suffixed with ``-`` + base36 of the absolute 32-bit
Java-style string hash of the path (observed with Claude Code 2.1.328, checked end to end by
tests/e2e). Stdlib only: the statusline and hooks use this too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
_SLUG_MAX = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _js_hash36(text: str) -> str:
    """base36(|h|) of JavaScript's ``h = (h << 5) - h + charCodeAt(i) | 0`` over the path."""
    data = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    n = abs(h - (1 << 32) if h >= 1 << 31 else h)
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _BASE36[r] + out
        if n == 0:
            return out


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def project_slug(directory: Path) -> str:
    path = os.path.realpath(directory)
    # a character outside the BMP is two UTF-16 code units, so two dashes (JavaScript strings)
    slug = _NON_ALNUM.sub(lambda m: "-" * (2 if ord(m.group()) > 0xFFFF else 1), path)
    if len(slug) <= _SLUG_MAX:
        return slug
    return f"{slug[:_SLUG_MAX]}-{_js_hash36(path)}"


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
