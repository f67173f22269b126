"""Consumed state: who resumed a package and when, kept beside the package, never inside it.

The package directory is sealed by its manifest (an extra file there is a validation error), so
the state lives in ``<packages>/<id>.state.json`` — a sibling file that ``list_packages`` never
mistakes for a package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from contextfork import atomic

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:  # pydantic stays off the git-hook path (pruning only needs state_path/forget)
    from contextfork.resume.models import ConsumedState


def state_path(pkg_dir: Path) -> Path:
    return pkg_dir.parent / f"{pkg_dir.name}.state.json"


def load(pkg_dir: Path, package_id: str) -> ConsumedState:
    """The recorded state; an unreadable file counts as 'never consumed' rather than failing."""
    from pydantic import ValidationError

    from contextfork.resume.models import ConsumedState

    path = state_path(pkg_dir)
    try:
        return ConsumedState.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return ConsumedState(package_id=package_id)


def session_from_env() -> str | None:
    """Harnesses export their session id; the first one set names who resumed."""
    for var in ("CONTEXTFORK_SESSION_ID", "CLAUDE_SESSION_ID", "CODEX_SESSION_ID"):
        if os.environ.get(var):
            return os.environ[var]
    return None


def mark_consumed(
    pkg_dir: Path, package_id: str, *, session_id: str | None, applied: bool, drift: bool
) -> ConsumedState:
    import getpass  # lazy: the pre-commit hook imports this module (session_from_env, forget)
    import socket  # lazy: the same

    from contextfork.package.store import utc_now_iso
    from contextfork.resume.models import Consumption

    state = load(pkg_dir, package_id)
    try:
        user: str | None = getpass.getuser()
    except (OSError, KeyError):
        user = None
    state.consumptions.append(
        Consumption(
            session_id=session_id or session_from_env(),
            at=utc_now_iso(),
            user=user,
            host=socket.gethostname() or None,
            applied=applied,
            drift=drift,
        )
    )
    atomic.write_json(state_path(pkg_dir), state.model_dump(mode="json"))
    return state


def forget(pkg_dir: Path) -> None:
    """Drop the state of a removed package (a single unlink is already atomic)."""
    path = state_path(pkg_dir)
    if path.exists():
        os.unlink(path)
