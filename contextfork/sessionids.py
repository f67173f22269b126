"""What a session id may be, before any path is built from it (stdlib + errors only).

Session ids name directories and files under ``.contextfork/`` (cold stores, fork records,
warning state), so traversal and odd names are refused. This lives apart from the cold store's
layout so the hooks can check an id without importing the store (dataclasses, hashing, the lock):
SessionStart with nothing to do must stay fast.
"""

from __future__ import annotations

import re

from contextfork.errors import UsageError

SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_session_id(session_id: str) -> str:
    """Refuse traversal, absolute paths and odd names before any path is built from them."""
    if not SESSION_RE.fullmatch(session_id) or session_id in {".", ".."} or ".." in session_id:
        raise UsageError(
            f"session id {session_id!r} is not a plain name",
            hint="use letters, digits, '.', '_' or '-' (no '/', no '..')",
        )
    return session_id
