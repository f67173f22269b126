"""What every MCP tool body shares: the allowed-roots checks of a model-written path, the
session argument, and the one-line tool error. Its own module so that tool modules
(``mcp.server``, ``mcp.curate``) import it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from contextfork.envelope import Result, envelope
from contextfork.errors import ContextforkError, UsageError
from contextfork.harness.mcp import allowed_roots


def call_tool(fn: Callable[[], Result]) -> dict[str, Any]:
    """Run one tool body: envelope on success, a one-line MCP tool error otherwise."""
    try:
        result = fn()
    except ContextforkError as err:
        raise ToolError(f"{type(err).__name__}: {err.one_line()}") from err
    except OSError as err:
        raise ToolError(f"OSError: {err.strerror or err}: {err.filename or ''}") from err
    return envelope(result)


def roots() -> allowed_roots.AllowedRoots:
    return allowed_roots.load()


def workspace_root(workspace: str | None) -> Path:
    """The git root of an allowed workspace; it, its git dir and its common dir must all be
    inside the allowed roots (a ``.git`` file can point git at another repository)."""
    import os

    from contextfork import gitstate

    allowed = roots()
    ws = allowed.check(workspace)
    loc = gitstate.locate(ws)
    root = Path(os.path.realpath(loc.root))
    if not allowed.contains(root):
        raise allowed_roots.PathRefused(
            f"the repository root {root} of {ws} is outside the allowed roots"
        )
    for what, path in (("git dir", loc.git_dir), ("git common dir", loc.common_dir)):
        real = Path(os.path.realpath(path))
        if not allowed.contains(real):
            raise allowed_roots.PathRefused(
                f"the {what} {real} of {ws} is outside the allowed roots (a .git file points "
                "there); refused",
                hint="add that repository to CONTEXTFORK_ALLOWED_ROOTS",
            )
    return root


def session_arg(session_id: str | None) -> str:
    from contextfork.cold.layout import check_session_id

    if not session_id:
        raise UsageError("session_id is required (the harness session whose cold store to use)")
    return check_session_id(session_id)


def transcript_arg(path: str | None) -> Path | None:
    return roots().check_transcript(path) if path else None
