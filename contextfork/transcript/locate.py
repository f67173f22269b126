"""Find the current Claude Code session transcript of a directory, so ``status`` needs no path.

Claude Code stores sessions in ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<slug>/`` where the
slug is the realpath with every non-alphanumeric character replaced by ``-`` (details in
``project_slug``). Stdlib only: the
statusline and hooks use this too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
_MAX_SLUG = 200
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _js_hash36(text: str) -> str:
    """``Math.abs(h).toString(36)`` of the Java-style 32-bit string hash Claude Code uses."""
    h = 0
    for unit in _utf16_units(text):
        h = (h * 31 + unit) & 0xFFFFFFFF
    n = abs(h - (1 << 32) if h >= 1 << 31 else h)
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _B36[r] + out
        if n == 0:
            return out


def project_slug(directory: Path) -> str:
    """Claude Code 2.1's folder name for a project (checked against the real client).

    Its JavaScript replaces every UTF-16 code unit that is not [A-Za-z0-9] with ``-`` (so an
    emoji gives two), and a slug longer than 200 is cut there and tagged with a hash of the path.
    """
    path = os.path.realpath(directory)
    if path.isascii():
        slug = _NON_ALNUM.sub("-", path)
    else:
        slug = "".join(
            chr(u) if u < 128 and chr(u).isalnum() else "-" for u in _utf16_units(path)
        )
    if len(slug) <= _MAX_SLUG:
        return slug
    return f"{slug[:_MAX_SLUG]}-{_js_hash36(path)}"


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
