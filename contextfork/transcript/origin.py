"""The session a Claude Code transcript was copied from (``--fork-session``: ``forkedFrom``).

Stdlib only and reads at most the file's head: SessionStart (``harness.pairing``) asks it at
every start, and the export asks it to name the origin's cold store.
"""

from __future__ import annotations

import json
from pathlib import Path

_HEAD_BYTES = 64 * 1024


def forked_from(transcript: Path | None) -> str | None:
    """The session a Claude Code transcript was copied from (``forkedFrom`` on its first line)."""
    if transcript is None:
        return None
    try:
        with open(transcript, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            return None
        origin = obj.get("forkedFrom") if isinstance(obj, dict) else None
        sid = origin.get("sessionId") if isinstance(origin, dict) else None
        return sid if isinstance(sid, str) and sid else None
    return None
