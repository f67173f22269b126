"""A cold store a package names but this checkout does not have: say so, and how to bring it.

A package carries ``cold_store_refs`` (``.contextfork/cold/<session>``), but ``push``/``pull``
move the store only when asked (``fold push``/``fold pull``, ``push``/``pull --with-cold``). In
another clone the resume brief used to send the agent to ``fold scan``, which printed
"(no cold store)" and exited 0, and to ``fold hydrate``, whose hint said "fold add". Here the
store's absence is checked against the packages, and the fix names the command that fetches it.

Read only on the error path (and by the resume brief): the prompt hook never imports it.
"""

from __future__ import annotations

from pathlib import Path

from contextfork.errors import NotFoundError
from contextfork.layout import COLD, STATE_DIR


def fetch_command(session_id: str, remote: str = "origin") -> str:
    return f"contextfork fold pull {remote} --session {session_id}"


def fetch_hint(session_id: str) -> str:
    """The fix, for a store that was pushed (or must first be pushed) from the exporting clone."""
    return (
        f"bring it with `{fetch_command(session_id)}` (or `contextfork pull origin --with-cold` "
        "for every store the pulled packages name); on the machine that folded it, "
        f"`contextfork fold push origin --session {session_id}` sends it first"
    )


def referencing(root: Path, session_id: str) -> list[str]:
    """Ids of the local packages that name this session's cold store (oldest first)."""
    from contextfork.cold.share import referenced_sessions
    from contextfork.errors import ContextforkError
    from contextfork.package.store import list_packages

    try:
        refs = list_packages(root)
    except ContextforkError:
        return []
    return [r.package_id for r in refs if session_id in referenced_sessions([r.path])[0]]


def absent_error(store_root: Path, session_id: str) -> NotFoundError | None:
    """The error for a store a package names that is not here; None when no package names it.

    ``store_root`` is ``<repo>/.contextfork/cold`` (an explicit store elsewhere names no repo)."""
    store = store_root / session_id
    if store_root.name != COLD or store_root.parent.name != STATE_DIR:
        return None
    root = store_root.parent.parent
    named_by = referencing(root, session_id)
    if not named_by:
        return None
    return NotFoundError(
        f"the cold store of session {session_id!r} named by package {named_by[-1]} is not in "
        f"this checkout ({store})",
        hint=fetch_hint(session_id),
    )


def store_state(root: Path, refs: list[str]) -> list[dict[str, object]]:
    """For the resume brief: each referenced store, whether it is here, and how to fetch it."""
    from contextfork.cold.share import _STORE_REF

    out: list[dict[str, object]] = []
    for ref in refs:
        m = _STORE_REF.match(ref)
        sid = m.group(1) if m else None
        present = (root / ref).is_dir() if m else False
        out.append({
            "ref": ref, "session": sid, "present": present,
            "fetch": fetch_command(sid) if sid and not present else None,
        })  # fmt: skip
    return out
