"""The one rule for creating a repository's ``.contextfork/``: keep it out of ``git status``.

Any entry point may be the first to write there (an export, a fold, ``render --repo``'s cold
store, a hook's log line, a policy file). Each calls ``ensure_state_dir`` before its first write,
so ``/.contextfork/`` is in ``.git/info/exclude`` whichever comes first. Stdlib only and no git
process once the directory exists: the hot paths (hooks) call it too.
"""

from __future__ import annotations

from pathlib import Path

STATE_DIR = ".contextfork"


def ensure_state_dir(root: Path) -> None:
    """Before the first write into ``root/.contextfork/``, add it to ``.git/info/exclude``."""
    if (root / STATE_DIR).exists():
        return
    try:
        from contextfork import gitstate

        gitstate.ensure_excluded(root)
    except Exception:  # noqa: BLE001, S110 - an unexcluded state dir is cosmetic, never fatal
        pass


def ensure_for_store(store_root: Path) -> None:
    """``ensure_state_dir`` for a cold store root ``<repo>/.contextfork/cold`` (else nothing)."""
    if store_root.name == "cold" and store_root.parent.name == STATE_DIR:
        ensure_state_dir(store_root.parent.parent)
