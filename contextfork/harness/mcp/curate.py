"""The MCP tool ``contextfork_context``: the agent's curation verbs (contextfork.curate).

Kept apart from ``mcp.server`` (which registers it) so that module stays one idea; it imports
no ``mcp`` itself. Like every tool it checks the workspace, and any transcript path in
``args``, against ``CONTEXTFORK_ALLOWED_ROOTS`` before the verb runs.
"""

from __future__ import annotations

from typing import Any


def contextfork_context(
    verb: str, session_id: str, args: dict[str, Any] | None = None, workspace: str | None = None
) -> dict[str, Any]:
    """Curate a session's folds (see docs/curate.md). verb: status | peek | expand | refold |
    pin | unpin | brief | reboundary | unmark. args names steps as {"step": N},
    {"steps": [first, last]} or {"key": K}; plus text (brief: your words for a fold, kept
    verbatim), offset / max_chars / max_tokens / view / record (peek: a verified slice, ephemeral unless
    record=true), kind (unmark: all|pin|expand|brief|boundary), clear (reboundary: automatic
    again), transcript / policy / k (status: also the folds and epochs of the live view).
    pin holds a step raw through every fold, in `fork` too; page-in prefers it on ties."""
    from contextfork.curate.api import run_verb
    from contextfork.envelope import Result
    from contextfork.harness.mcp.common import (
        call_tool,
        session_arg,
        transcript_arg,
        workspace_root,
    )

    def run() -> Result:
        given = dict(args or {})
        if given.get("transcript") is not None:
            given["transcript"] = str(transcript_arg(str(given["transcript"])))
        return run_verb(workspace_root(workspace), session_arg(session_id), verb, given)

    return call_tool(run)
